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
