"""A damaged file of the run cache that the command's own process named while listing the
units is not named again by the ``--jobs`` worker that computes its unit."""

from __future__ import annotations

from pathlib import Path

import pytest


def _warn_about(path: str) -> None:
    from longred_bench.cache import warn_once

    warn_once(f"run cache {path} is corrupt", Path(path))


@pytest.mark.integration
def test_a_worker_does_not_repeat_a_warning_the_command_gave(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    from longred_bench.reproduce.pool import Unit, run_units_parallel

    damaged = tmp_path / "eval.jsonl"
    damaged.write_text("cut")
    _warn_about(str(damaged))  # the listing's warning
    other = tmp_path / "other.jsonl"
    other.write_text("cut")
    work = [Unit(_warn_about, (str(damaged),), "a", key="a"),
            Unit(_warn_about, (str(other),), "b", key="b")]  # fmt: skip
    assert sorted(run_units_parallel(work, 2, name="t", progress=False)) == ["a", "b"]
    err = capfd.readouterr().err
    assert err.count(f"run cache {damaged} is corrupt") == 1, err
    assert err.count(f"run cache {other} is corrupt") == 1, err  # a new one is still said
