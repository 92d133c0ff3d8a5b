"""A profile file's YAML is parsed once per content within a process (a command read its
profile and the files it extends again at each unit's config: 140 parses, 3.5 s of a smoke
reproduce), while each read gets its own copy and an edited file is read anew."""

from __future__ import annotations

import os

import yaml

from longred_bench.profiles.loader import load_profile, read_mapping


def test_one_parse_per_content_and_a_copy_per_read(tmp_path, monkeypatch) -> None:
    calls = []
    real = yaml.load

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(yaml, "load", counting)
    path = tmp_path / "p.yaml"
    path.write_text("name: p-reads\nextends: smoke\nruns: {seeds: 2}\n")
    first = read_mapping(path)
    first["runs"]["seeds"] = 9  # a caller's change stays its own
    assert read_mapping(path) == {"name": "p-reads", "extends": "smoke", "runs": {"seeds": 2}}
    assert len(calls) == 1
    for _ in range(5):
        assert load_profile(path).runs.seeds == 2
    assert len(calls) <= 2  # the built-in parent once, this file never again
    stat = path.stat()
    path.write_text("name: p-reads\nextends: smoke\nruns: {seeds: 3}\n")  # same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # and the same time
    assert read_mapping(path)["runs"]["seeds"] == 3
