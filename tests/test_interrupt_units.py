"""Ctrl-C inside a unit of the run cache (``reproduce``'s drift and evaluation units) and in a
PCD evaluation: what each kept of its work, the interrupted line that names it, and the resume
that computes only the rest and ends with what an uninterrupted run gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from data_helpers import ensure_cached
from interrupt_helpers import (
    Interrupt,
    bare_records,
    patch_responses,
    written_as_declared,
)

from longred_bench import cli


def test_eval_with_pcd_resumed_after_its_last_response_records_every_local_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """A resumed PCD run answers every request from its saved responses, without running a
    local pass: its records still list the local windows those responses were computed with."""
    argv = ["eval", "--model", "tiny-random", "--rope", "pi:factor=4", "--suite", "ruler"]
    argv += ["--tasks", "longred_ruler_vt", "--lengths", "512", "1024", "--samples", "1"]
    argv += ["--decoding", "pcd", "--quiet"]
    counted = patch_responses(monkeypatch, None)
    assert cli.main([*argv, "--out", str(tmp_path / "whole")]) == 0
    whole = bare_records(tmp_path / "whole" / "eval.jsonl")
    assert sorted({w["window"] for w in whole[0]["pcd"]["local"]}) == [128, 256]
    monkeypatch.undo()

    out = tmp_path / "cut"
    patch_responses(monkeypatch, counted.calls)  # every response saved, no record written
    assert cli.main([*argv, "--out", str(out)]) == 130
    monkeypatch.undo()
    again = patch_responses(monkeypatch, None)
    assert cli.main([*argv, "--out", str(out)]) == 0
    assert again.calls == 0
    capsys.readouterr()
    assert bare_records(out / "eval.jsonl") == whole
    written_as_declared(out, "eval")


def test_a_run_cache_drift_unit_interrupted_resumes_after_its_finished_windows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """A ``reproduce`` unit (Table 1's drift) interrupted in its third window lost the two it
    had finished: the same command measured it from the first again."""
    import longred_bench.metrics.drift as drift
    from longred_bench.cli.interrupt import _unit_now
    from longred_bench.jobs.units import CachedUnit

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    config = {"original": "tiny-random", "rope": ["pi:factor=4"], "texts": "random",
              "num_texts": 4, "seq_len": 64}  # fmt: skip
    whole = CachedUnit("drift", "runs/t-drift/whole", config).run(progress=False)
    unit = CachedUnit("drift", "runs/t-drift/cut", config)
    monkeypatch.setattr(drift, "_text_sums", Interrupt(drift._text_sums, 3))  # in window 3
    with pytest.raises(KeyboardInterrupt):
        unit.run(progress=False)
    assert _unit_now().startswith("the unit in progress kept the drift of 2 window(s) in ")
    monkeypatch.undo()
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    again = Interrupt(drift._text_sums, None)
    monkeypatch.setattr(drift, "_text_sums", again)
    capsys.readouterr()
    got = unit.run(progress=False)
    assert again.calls == 2  # the two windows left
    assert "[drift] resuming after 2 of 4 windows" in capsys.readouterr().out
    strip = lambda rs: [{k: v for k, v in r.items() if k not in ("provenance", "seconds")}  # noqa: E731
                        for r in rs]  # fmt: skip
    assert strip(got) == strip(whole)
    assert not (unit.dir / "partial").exists()  # gone with the result swapped in
    assert _unit_now() == ""


@pytest.mark.integration
def test_a_run_cache_eval_unit_interrupted_resumes_from_its_saved_responses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, request
) -> None:
    """A ``reproduce`` evaluation unit interrupted after 3 of its 4 responses kept none of
    them; it keeps them in its folder and computes only the fourth again."""
    from longred_bench.cache import cache_dir
    from longred_bench.jobs.units import CachedUnit

    ensure_cached(request, "brown")
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "corpora").symlink_to(cache_dir() / "corpora")  # the data, read only
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    config = {"model": "tiny-random", "suite": "ruler", "lengths": [1024], "samples": 2,
              "tasks": ["longred_ruler_niah_single_1", "longred_ruler_niah_single_2"]}  # fmt: skip
    unit = CachedUnit("eval", "runs/t-eval/cut", config)
    patch_responses(monkeypatch, 3)
    with pytest.raises(KeyboardInterrupt):
        unit.run(progress=False)
    monkeypatch.undo()
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    again = patch_responses(monkeypatch, None)
    capsys.readouterr()
    records = unit.run(progress=False)
    assert again.calls == 1 and records
    assert "3 model response(s) an interrupted call saved are reused" in capsys.readouterr().out
    assert not (unit.dir / "partial").exists()
