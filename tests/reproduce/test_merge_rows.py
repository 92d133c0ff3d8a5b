"""The ``merge`` row of ``reproduce table7``: its cache key follows the trained run it merges (a
source trained again makes a new merge; a moved run cache does not), and its source is the
``cpt`` run of the same extension and seed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from longred_bench.errors import UserError
from longred_bench.jobs.units import train_key
from longred_bench.reproduce.grid import TrainedRow, merge_source
from longred_bench.training.config import resolve_config


def _source(root: Path, seconds: float) -> Path:
    run = root / "runs" / "train-cpt-0123456789abcdef"
    (run / "final").mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"tokens": 10, "seconds": seconds}))
    return run / "final"


def _merge_key(final: Path) -> str:
    return train_key(resolve_config("merge", profile="smoke", overrides={"merge_with": str(final)}))


def test_merge_key_follows_the_source_run_not_its_path(tmp_path: Path) -> None:
    first = _source(tmp_path / "a", 1.0)
    key = _merge_key(first)
    moved = tmp_path / "b"
    shutil.copytree(tmp_path / "a", moved)
    assert _merge_key(moved / "runs" / first.parent.name / "final") == key
    (first.parent / "run.json").write_text(json.dumps({"tokens": 10, "seconds": 2.0}))
    assert _merge_key(first) != key  # the source was trained again: a new merge


def test_merge_source_is_the_cpt_run_of_the_same_extension_and_seed() -> None:
    assert merge_source(TrainedRow("merge", "abf:theta=2e6", 2)) == TrainedRow(
        "cpt", "abf:theta=2e6", 2
    )
    with pytest.raises(UserError, match="needs an extension"):
        merge_source(TrainedRow("merge", None, 0))


def test_a_merge_step_waits_for_its_source_run() -> None:
    """Table 7's merge of seed s waits for the cpt run of seed s; its evaluations wait for it."""
    from profile_helpers import ctx_of

    from longred_bench.jobs.units import train_unit
    from longred_bench.reproduce.table7 import SPEC

    ctx = ctx_of("table7")
    grid, steps = SPEC.grid(ctx), SPEC.steps(ctx)
    merges = [s for s in steps if s.unit.kind == "train" and s.unit.config["recipe"] == "merge"]
    assert len(merges) == 3
    for seed, step in enumerate(merges):
        source = train_unit(TrainedRow("cpt", "pi:factor=2", seed).config(grid))
        assert step.after == (source.folder,)
        assert step.unit.config["merge_with"] == str(source.dir / "final")
    assert [s for s in steps if s.train == merges[0].key]
