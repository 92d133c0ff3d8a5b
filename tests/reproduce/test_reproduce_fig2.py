"""``reproduce fig2``: retention against hidden similarity over zero-shot and CPT-trained
extensions; the tiny profile's CPT runs are Table 3's seed-0 runs where those exist."""

from __future__ import annotations

import pytest

from longred_bench.cli import main
from longred_bench.reports.verdict_rules import LABEL_RULE
from longred_bench.results import read_records


@pytest.mark.integration
def test_reproduce_fig2_smoke(tmp_path, smoke_cache):
    out = tmp_path / "report"
    argv = ["reproduce", "fig2", "--profile", "smoke", "--out", str(out), "--quiet"]
    assert main([*argv, "--jobs", "2"]) == 0
    records = read_records(out / "fig2.jsonl.gz")
    drift = {(r["series"], r["extension"]) for r in records if r["kind"] == "drift_summary"}
    assert drift == {("zero-shot", "abf:theta=1e5"), ("zero-shot", "pi:factor=2"),
                     ("zero-shot", "yarn:factor=2"), ("cpt", "abf:theta=1e5"),
                     ("cpt", "abf:theta=1e6"), ("cpt", "pi:factor=2")}  # fmt: skip
    trained = [r for r in records if r["kind"] == "drift_summary" and r["series"] == "cpt"]
    assert all(r["train"]["steps"] == 2 for r in trained)  # Table 3's smoke CPT
    md = (out / "fig2.md").read_text()
    assert md.count(LABEL_RULE) == 1  # the label rule once, above the evidence
    assert "| after long-only CPT | `pi:factor=2` |" in md
    assert md.count("| (F2) Short-text retention correlates") == 2
    assert (out / "fig2.png").read_bytes()[:4] == b"\x89PNG"


def test_tiny_fig2_trains_twelve_extensions_with_table3s_cpt_config():
    from profile_helpers import ctx_of, grid_of

    from longred_bench.jobs.units import train_unit
    from longred_bench.reproduce.fig2 import SPEC
    from longred_bench.reproduce.grid import TrainedRow, eval_units

    ctx, table3 = ctx_of("fig2"), grid_of("table3")
    trained = ctx.settings.trained
    assert len(trained) >= 12 and set(table3.extensions) <= set(trained)
    assert {ext.split(":")[0] for ext in trained} == {"abf", "pi", "yarn"}
    assert len(ctx_of("fig2", "smol").settings.zero_shot) >= 12
    steps = SPEC.steps(ctx)
    # the CPT runs are Table 3's config (seed 0), and the short evaluation is Table 3's unit,
    # so Table 3's cached runs and evaluations are reused
    run = train_unit(TrainedRow("cpt", "pi:factor=2", 0).config(table3))
    assert run.folder in {s.key for s in steps}
    table3_short = eval_units(table3, str(run.dir / "final"), None, "pi:factor=2")[0]
    assert any(s.unit.config == table3_short for s in steps)
