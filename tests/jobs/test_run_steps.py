"""A finished run's per-step record: its timings, and the provenance of its training with the
suite-built weights it started from (the training records none itself)."""

from __future__ import annotations

import json
from pathlib import Path

from longred_bench.jobs.builds import BASE_FILE
from longred_bench.jobs.run_steps import run_steps_record
from longred_bench.results import STEPS_KIND


def _run(tmp_path: Path, provenance: dict | None, base: dict | None) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    lines = [{"step": i + 1, "seconds": 1.5 * (i + 1), "tokens": 100 * (i + 1)} for i in range(3)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    info = {"steps": 3} | ({"provenance": provenance} if provenance is not None else {})
    (run / "run.json").write_text(json.dumps(info))
    if base is not None:
        (run / BASE_FILE).write_text(json.dumps(base))
    return run


def test_the_record_names_the_built_weights_the_run_started_from(tmp_path: Path) -> None:
    prov = {"commit": "abc", "source": "123", "builds": {}}
    record = run_steps_record(_run(tmp_path, prov, {"tiny-base": "w1"}))
    assert record == {
        "kind": STEPS_KIND,
        "step_seconds": [1.5, 3.0, 4.5],
        "step_tokens": [100, 200, 300],
        "provenance": {"commit": "abc", "source": "123", "builds": {"tiny-base": "w1"}},
    }


def test_a_run_from_no_built_model_keeps_its_provenance_as_recorded(tmp_path: Path) -> None:
    prov = {"commit": "abc", "builds": {}}
    assert run_steps_record(_run(tmp_path, prov, None))["provenance"] == prov
    other = tmp_path / "other"
    other.mkdir()
    kept = {"commit": "abc", "builds": {"tiny-base": "w0"}}  # recorded by the run: not replaced
    assert run_steps_record(_run(other, kept, {"tiny-base": "w1"}))["provenance"] == kept


def test_a_run_without_provenance_or_metrics(tmp_path: Path) -> None:
    run = _run(tmp_path, None, {"tiny-base": "w1"})
    assert "provenance" not in run_steps_record(run)
    (run / "metrics.jsonl").unlink()
    assert run_steps_record(run) is None
