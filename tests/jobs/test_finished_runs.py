"""When the run cache takes a training run as finished (:func:`finished_run`): its ``final/``
model and its ``run.json`` both written. A run killed after ``run.json`` (written first) and
before its final model was whole is not finished (it resumes), and a final model without its
``run.json`` is unfinished without a word of damage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longred_bench.jobs.units import finished_run


def _records(run: Path) -> None:
    run.mkdir(parents=True, exist_ok=True)
    (run / "metrics.jsonl").write_text(json.dumps({"step": 2, "loss": 1.0}) + "\n")


def test_only_a_run_with_its_final_model_and_run_json_is_finished(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "train-cpt-0"
    _records(run)
    (run / "run.json").write_text(json.dumps({"tokens": 64, "seconds": 1.5}))
    assert finished_run(run) is None  # killed while final/ was written
    (run / "final").mkdir()
    (run / "final" / "config.json").write_text("{}")
    assert finished_run(run) == {"steps": 2, "tokens": 64, "seconds": 1.5, "dir": str(run)}
    (run / "run.json").unlink()
    capsys.readouterr()
    assert finished_run(run) is None
    assert capsys.readouterr().err == ""  # unfinished, not damaged


@pytest.mark.parametrize(
    ("name", "record", "missing"),
    [("run.json", {"tokens": 64}, "seconds"), ("run.json", {"seconds": 1.5}, "tokens"),
     ("metrics.jsonl", {"loss": 1.0}, "step")],
)  # fmt: skip
def test_a_record_that_parses_without_its_figures_is_damaged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, record: dict, missing: str
) -> None:
    """A ``run.json`` or last metrics record that parses but lacks a figure the summary needs
    (cut short, or edited) was a KeyError traceback; it is damaged: said, and trained again."""
    run = tmp_path / "train-cpt-0"
    _records(run)
    (run / "run.json").write_text(json.dumps({"tokens": 64, "seconds": 1.5}))
    (run / "final").mkdir()
    (run / "final" / "config.json").write_text("{}")
    (run / name).write_text(json.dumps(record) + "\n")
    capsys.readouterr()
    assert finished_run(run) is None
    err = capsys.readouterr().err
    assert f"{run / name} is damaged (no {missing!r}): training this run again" in err
