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
    [("run.json", {"tokens": 64}, "no 'seconds'"), ("run.json", {"seconds": 1.5}, "no 'tokens'"),
     ("metrics.jsonl", {"loss": 1.0}, "no 'step'"),
     ("run.json", {"tokens": 64, "seconds": "1.5s"}, "'seconds' is not a number"),
     ("metrics.jsonl", {"step": None}, "'step' is not a number")],
)  # fmt: skip
def test_a_record_that_parses_without_its_figures_is_damaged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, record: dict, missing: str
) -> None:
    """A ``run.json`` or last metrics record that parses but lacks a figure the summary needs
    (cut short, or edited) was a KeyError traceback, one whose figure is not a number a
    ValueError where a plan read its time; it is damaged: said, and trained again."""
    run = tmp_path / "train-cpt-0"
    _records(run)
    (run / "run.json").write_text(json.dumps({"tokens": 64, "seconds": 1.5}))
    (run / "final").mkdir()
    (run / "final" / "config.json").write_text("{}")
    (run / name).write_text(json.dumps(record) + "\n")
    capsys.readouterr()
    assert finished_run(run) is None
    err = capsys.readouterr().err
    assert f"{run / name} is damaged ({missing}): the run is not taken as finished" in err


@pytest.mark.integration
def test_a_finished_run_with_a_damaged_run_json_resumes_from_its_last_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cached run whose ``run.json`` was cut short (its metrics whole) was taken as finished
    by the resume it tried ("holds this run finished: nothing to resume"), then trained again
    from the start under a warning said at every read; it resumes from its last checkpoint
    (no step trains again), its ``run.json`` set aside, named once, and ends with the same
    weights; with its metrics cut too it is trained again, as a resume cannot give them back."""
    from longred_bench.jobs import train
    from longred_bench.jobs.units import aside_of, train_cached
    from longred_bench.training.config import resolve_config

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    cfg = resolve_config("cpt", profile="smoke", overrides={"long_data": "random"})
    final, info = train_cached(cfg, progress=False)
    run = final.parent
    weights = (final / "model.safetensors").read_bytes()
    (run / "run.json").write_text('{"tokens": 12')
    calls, real = [], train.run_training

    def recording(cfg, out, **kw):
        calls.append((kw.get("resume", False), aside_of(out).exists()))
        return real(cfg, out, **kw)

    monkeypatch.setattr(train, "run_training", recording)
    capsys.readouterr()
    again, info2 = train_cached(cfg, progress=True)
    said = capsys.readouterr()
    assert calls == [(True, False)]  # resumed, never set aside and trained from the start
    assert f"resuming {run} from step-{cfg.steps:06d}: step {cfg.steps} of {cfg.steps}" in said.out
    assert "nothing to resume" not in said.out
    assert said.err.count(f"{run / 'run.json'} is damaged") == 1
    assert again == final and info2["tokens"] == info["tokens"]
    assert (again / "model.safetensors").read_bytes() == weights
    assert (run / "run.json.damaged").read_text() == '{"tokens": 12'

    calls.clear()
    (run / "run.json").write_text('{"tokens": 12')
    metrics = run / "metrics.jsonl"
    metrics.write_bytes(metrics.read_bytes()[:-40])
    third, _ = train_cached(cfg, progress=False)
    assert calls == [(False, True)]  # trained again from the start, the old folder aside
    assert (third / "model.safetensors").read_bytes() == weights
