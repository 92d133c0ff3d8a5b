"""A training run interrupted before its run cache moved resumes after the move: its saved
config is rewritten to name its trained checkpoints where they are now, and only where nothing
else differs (another run's checkpoint, a key more or less, are left for the resume to refuse);
the profile's name, which decides nothing it trains, may differ."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from longred_bench.jobs.key_root import follow_moved_cache

OLD = "/scratch/cache/runs/train-cpt-0123456789abcdef/final"
NEW = "/home/me/cache/runs/train-cpt-0123456789abcdef/final"


class _Config:
    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        return dict(self.data)


def _saved(tmp_path, data: dict[str, Any]):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(data, sort_keys=True))
    return tmp_path / "config.yaml"


def _now(path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


def test_a_checkpoint_of_the_same_run_under_another_root_is_followed(tmp_path) -> None:
    path = _saved(tmp_path, {"recipe": "linearard", "init": OLD, "profile": "one", "seed": 0})
    now = {"recipe": "linearard", "init": NEW, "profile": "two", "seed": 0}
    follow_moved_cache(tmp_path, _Config(now))
    assert _now(path) == now


@pytest.mark.parametrize(
    "now",
    [
        {"recipe": "linearard", "init": NEW.replace("0123456789abcdef", "fedcba9876543210"),
         "profile": "one", "seed": 0},
        {"recipe": "linearard", "init": NEW, "profile": "one", "seed": 1},
        {"recipe": "linearard", "init": NEW, "profile": "one", "seed": 0, "steps": 3},
        {"recipe": "linearard", "init": NEW, "profile": "one"},
    ],
    ids=["another-run", "another-seed", "a-key-more", "a-key-less"],
)  # fmt: skip
def test_a_config_that_differs_otherwise_is_left_as_saved(tmp_path, now) -> None:
    saved = {"recipe": "linearard", "init": OLD, "profile": "one", "seed": 0}
    path = _saved(tmp_path, saved)
    follow_moved_cache(tmp_path, _Config(now))
    assert _now(path) == saved


@pytest.mark.parametrize("text", ['{"root": ""}', '{"root": 5}', '["/old/root"]', "{}"])
def test_a_key_root_file_naming_no_root_is_damaged_and_recorded_again(
    tmp_path, monkeypatch, capsys, text
) -> None:
    """A ``.key-root`` that parses but names no root (empty, not a string, no ``root``) is
    said to be damaged and written again with the cache's root."""
    import json

    from longred_bench.jobs import key_root as roots

    root = tmp_path / "cache"
    (root / "runs").mkdir(parents=True)
    recorded = root / "runs" / roots.KEY_ROOT_FILE
    recorded.write_text(text)
    monkeypatch.setenv("LONGRED_CACHE", str(root))
    roots._key_root.cache_clear()
    assert roots.key_root() == str(root)
    assert f"run cache {recorded} is damaged" in capsys.readouterr().err
    roots.record_key_root()
    assert json.loads(recorded.read_text()) == {"root": str(root)}


def test_paths_in_a_list_are_written_under_the_key_root(tmp_path, monkeypatch) -> None:
    """A unit naming several checkpoints (drift's ``extended``) keys each of them under the root
    the cache was first keyed at, in lists and mappings nested in it too."""
    import json

    from longred_bench.jobs.key_root import KEY_ROOT_FILE, portable

    root = tmp_path / "c"
    (root / "runs").mkdir(parents=True)
    (root / "runs" / KEY_ROOT_FILE).write_text(json.dumps({"root": "/old/root"}))
    monkeypatch.setenv("LONGRED_CACHE", str(root))
    one, two = (str(root / "runs" / f"train-{n}" / "final") for n in ("a", "b"))
    got = portable({"extended": [one, {"model": two}], "pair": (one, "tiny-random")})
    assert got == {
        "extended": ["/old/root/runs/train-a/final", {"model": "/old/root/runs/train-b/final"}],
        "pair": ["/old/root/runs/train-a/final", "tiny-random"],
    }
