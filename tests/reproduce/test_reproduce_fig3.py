"""``reproduce fig3``: long-only CPT runs several times Table 3's length with their models kept at
log-spaced steps, each scored on the short suite, beside the zero-shot extension (step 0)."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file

from longred_bench.cli import main
from longred_bench.errors import UserError
from longred_bench.reports.verdict_rules import LABEL_RULE
from longred_bench.results import read_records


@pytest.mark.integration
def test_reproduce_fig3_smoke_scores_every_snapshot_and_reuses_them(tmp_path, smoke_cache):
    out = tmp_path / "report"
    argv = ["reproduce", "fig3", "--profile", "smoke", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    records = read_records(out / "fig3.jsonl.gz")
    steps = {(r["row"], r["step"]) for r in records if r["kind"] == "eval"}
    assert steps == {("original", None), ("zero-shot", 0), ("cpt", 1), ("cpt", 2), ("cpt", 4)}
    trained = next(r["train"] for r in records if r["row"] == "cpt")
    assert trained["steps"] == 4 and trained["table_steps"] == 2  # 2 x Table 3's smoke steps
    # One per-step record for the curve run, its summary without a snapshot's extras.
    (timed,) = [r for r in records if r["kind"] == "train_steps"]
    assert len(timed["step_seconds"]) == 4 and "snapshot" not in timed["train"]
    md = (out / "fig3.md").read_text()
    assert md.count(LABEL_RULE) == 1  # the label rule once, above the evidence
    assert "| `abf:theta=1e5` | 4 | 8,192 |" in md
    assert "| (F3) During long-only CPT the short-text score recovers early" in md
    assert (out / "fig3.png").read_bytes()[:4] == b"\x89PNG"
    # the snapshot at Table 3's steps is Table 3's CPT model of the same seed, bit for bit
    from profile_helpers import ctx_of, grid_of

    from longred_bench.jobs.units import run_dir_of, train_cached
    from longred_bench.reproduce import fig3
    from longred_bench.reproduce.grid import TrainedRow
    from longred_bench.training.layout import snapshot_dir

    ctx = ctx_of("fig3", "smoke")
    curve = run_dir_of(fig3.run_config(ctx, fig3.grid(ctx), "abf:theta=1e5", 0))
    final, _ = train_cached(
        TrainedRow("cpt", "abf:theta=1e5", 0).config(grid_of("table3", "smoke")), progress=False
    )
    snap = load_file(str(snapshot_dir(curve, 2) / "model.safetensors"))
    table3 = load_file(str(final / "model.safetensors"))
    assert all(torch.equal(snap[k], table3[k]) for k in table3)
    runs = sorted((smoke_cache / "runs").glob("train-cpt-*"))
    stamp = [p.stat().st_mtime for p in runs]
    assert main(argv) == 0  # every unit cached: nothing is trained again
    assert [p.stat().st_mtime for p in runs] == stamp
    assert read_records(out / "fig3.jsonl.gz") == records


def test_tiny_fig3_runs_are_table3_cpt_runs_four_times_longer():
    from profile_helpers import ctx_of, grid_of

    from longred_bench.reproduce import fig3
    from longred_bench.reproduce.grid import TrainedRow

    ctx, table3 = ctx_of("fig3"), grid_of("table3")
    grid = fig3.grid(ctx)
    assert grid.extensions == table3.extensions and grid.seed_count("cpt") == 3
    for ext in grid.extensions:
        t3 = TrainedRow("cpt", ext, 1).config(table3)
        curve = fig3.run_config(ctx, grid, ext, 1)
        assert curve.steps == 4 * t3.steps == 256
        assert list(curve.snapshot_steps) == [4, 16, 64, 256]
        assert curve.replace(steps=t3.steps, snapshot_steps=[]) == t3


def test_fig3_refuses_a_decaying_schedule_and_a_short_last_snapshot():
    from profile_helpers import ctx_of

    from longred_bench.reproduce import fig3

    short = ctx_of("fig3", snapshots=[4, 16, 64])
    with pytest.raises(UserError, match="last snapshot"):
        fig3.run_config(short, fig3.grid(short), "pi:factor=2", 0)
    decaying = ctx_of("fig3", overrides={"schedule": "cosine"})
    with pytest.raises(UserError, match="constant learning rate"):
        fig3.run_config(decaying, fig3.grid(decaying), "pi:factor=2", 0)
    with pytest.raises(UserError, match=r"tables\.fig3\.snapshots: must be increasing"):
        ctx_of("fig3", snapshots=[16, 4])
