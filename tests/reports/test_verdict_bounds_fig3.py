"""Figure 3's verdicts (:func:`~longred_bench.reports.fig3_report.fig3_verdicts`) at the edges
the other Figure 3 tests leave open: no verdict without a snapshot past Table 3's steps, and the
recovery compares the mean of *every* early snapshot with the zero-shot model."""

from __future__ import annotations

from longred_bench.reports.fig3_report import fig3_verdicts
from longred_bench.reports.runs import Run

EXT = "abf:theta=2e7"
DOCS = range(60)


def _run(score: float, steps: int | None = 20) -> Run:
    """60 documents of task ``t``, ``score``% of them right; ``steps``: Table 3's steps."""
    items = {d: 100.0 if d < score * 0.6 else 0.0 for d in DOCS}
    train = None if steps is None else {"table_steps": steps}
    return Run(short={"t": score}, short_items={"t": items}, train=train)


def _runs(snapshots: tuple[tuple[int, float], ...]) -> dict:
    runs = {(None, None, 0): _run(60.0, None), (EXT, 0, 0): _run(30.0, None)}
    return runs | {(EXT, step, 0): _run(score) for step, score in snapshots}


def test_no_snapshot_past_table_3s_steps_gives_no_verdict() -> None:
    # The last snapshot is at Table 3's 20 steps: there is no "late" to decline to.
    assert fig3_verdicts(_runs(((10, 55.0), (20, 50.0))), {"gen": ("t",)}) == []
    assert len(fig3_verdicts(_runs(((10, 55.0), (40, 50.0))), {"gen": ("t",)})) == 1


def test_recovery_is_the_mean_of_every_early_snapshot() -> None:
    # Early snapshots at 40 and 50 points (mean 45) against zero-shot's 30: +15; late 35: -10.
    (v,) = fig3_verdicts(_runs(((5, 40.0), (10, 50.0), (40, 35.0))), {"gen": ("t",)})
    assert "early = steps 5, 10, late = step 40" in v.ours
    assert "recovery (early - zero-shot) +15.00" in v.ours
    assert "decline (late - early) -10.00" in v.ours
