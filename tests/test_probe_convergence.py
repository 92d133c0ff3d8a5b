"""``benchmarks/probe_convergence.py``: the convergence rule applied at every build length of
one long run (unit), and its report written from a run directory."""

from __future__ import annotations

import json

from script_loader import load_script

probe = load_script("probe_convergence")


def _records(loss_at) -> list[dict]:
    """Training records every 50 steps to 3,000, held-out losses from ``loss_at(step)``."""
    out = []
    for step in range(50, 3001, 50):
        loss = loss_at(step)
        out.append({"step": step, "loss": loss, "heldout_a": loss, "heldout_b": loss + 0.1})
    return out


def test_gains_apply_the_rule_at_each_length():
    # 5% drop per 1.5x until step 1,000, flat from there: lengths from 1,000 on pass.
    def loss(step: int) -> float:
        return 5.0 * 0.95 ** (min(step, 1000) / 100)

    rows = probe.gains(_records(loss), start=800)
    by_steps = {r["steps"]: r for r in rows}
    assert set(by_steps) == {s for s in range(800, 2001, 100)}  # 1.5 S must be a held-out step
    assert by_steps[800]["converged"] == "no"
    assert by_steps[800]["a gain %"] > 1.0
    assert by_steps[1000]["converged"] == "yes"
    assert by_steps[1000]["a gain %"] == 0.0
    assert by_steps[900]["longer_steps"] == 1350


def test_report_says_when_no_length_passes(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    records = _records(lambda step: 6.0 - 0.3 * (step / 100) ** 0.5)  # keeps falling
    (run / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    info = {"tokens": 123, "device": "cpu", "dtype": "float32", "tokens_per_second": 10.0}
    (run / "run.json").write_text(json.dumps(info))
    out = tmp_path / "out"
    assert probe.main([str(run), "--out", str(out), "--commit", "abc1234"]) == 0
    md = (out / "convergence_probe.md").read_text()
    assert "No build length up to 2000 steps (checked against 3000) passes the rule." in md
    assert "`abc1234` (no source hash recorded)" in md
    assert (out / "convergence_probe.png").stat().st_size > 0
    assert (out / "convergence_probe.csv").read_text().startswith("step,a,b")


def test_report_names_the_commit_and_source_hash_the_run_recorded(tmp_path):
    """A run's run.json carries its provenance: the report names its commit and source hash
    (and dirty flag), not a commit given by hand."""
    run = tmp_path / "run"
    run.mkdir()
    records = _records(lambda step: 5.0)
    (run / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    prov = {"git_commit": "def5678", "source_hash": "0123456789abcdef", "dirty": False,
            "device": "cpu"}  # fmt: skip
    info = {"tokens": 1, "device": "cpu", "dtype": "float32", "tokens_per_second": 1.0,
            "provenance": prov}  # fmt: skip
    (run / "run.json").write_text(json.dumps(info))
    out = tmp_path / "out"
    assert probe.main([str(run), "--out", str(out), "--commit", "ignored"]) == 0
    md = (out / "convergence_probe.md").read_text()
    assert "commit `def5678`; source `0123456789ab`" in md
    assert "ignored" not in md
