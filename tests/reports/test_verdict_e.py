"""Claim (e) of ``longred_bench.reports.verdicts``, the premise of (b): long-context CPT learns
long-context ability the zero-shot extension lacks, judged by the seed-aware interval of
RULER(cpt) - RULER(zero-shot) on hand-built ``RunScores``."""

from __future__ import annotations

from longred_bench.reports.long_verdict import verdict_cpt_learns_long
from longred_bench.reports.verdicts import (
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    REPRODUCED,
    UNDECIDED,
    RunScores,
)


def _run(row: str, hits: int, seed: int = 0, n: int = 40) -> RunScores:
    """A run that retrieves the first ``hits`` of ``n`` RULER samples (score 100, else 0)."""
    per = {i: 100.0 if i < hits else 0.0 for i in range(n)}
    return RunScores(
        "pi:factor=2", row, seed, 50.0, 100.0 * hits / n,
        ruler={"niah_single_1": {512: per}},
    )  # fmt: skip


def test_cpt_clearly_above_the_zero_shot_extension_is_reproduced() -> None:
    zero = _run("zero-shot", 0)
    cpt = [_run("cpt", 10, seed) for seed in range(3)]
    v = verdict_cpt_learns_long(zero, cpt, "`pi:factor=2`")
    assert (v.key, v.label, v.source) == ("e", REPRODUCED, "ours")
    assert "+25.00" in v.ours and "n=40 samples" in v.ours


def test_cpt_at_or_below_the_zero_shot_level() -> None:
    zero = _run("zero-shot", 4)
    assert verdict_cpt_learns_long(zero, [_run("cpt", 4)], "s").label == UNDECIDED
    assert verdict_cpt_learns_long(zero, [_run("cpt", 0)], "s").label == NOT_REPRODUCED


def test_seeds_that_disagree_widen_the_interval_past_zero() -> None:
    """The same mean gain over the zero-shot row: with one seed that learned and two that did
    not, the seeds' spread (t over 3 seeds) puts 0 inside the interval; with three seeds that
    agree it is outside."""
    zero = _run("zero-shot", 0)
    agree = [_run("cpt", 4, seed) for seed in range(3)]
    disagree = [_run("cpt", 12, 0), _run("cpt", 0, 1), _run("cpt", 0, 2)]
    assert verdict_cpt_learns_long(zero, agree, "s").label == REPRODUCED
    assert verdict_cpt_learns_long(zero, disagree, "s").label == UNDECIDED


def test_no_shared_samples_is_not_comparable() -> None:
    zero = RunScores("pi:factor=2", "zero-shot", 0, 50.0, 0.0)
    assert verdict_cpt_learns_long(zero, [_run("cpt", 10)], "s").label == NOT_COMPARABLE
