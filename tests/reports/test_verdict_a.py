"""LongReD's claim (a), CPT loses short ability (``verdict_cpt_loses_short``), on hand-built
``RunScores``: an interval that contains 0 reads "not reproduced" where it also excludes the
paper's effect scaled to the original's Short Avg, and "undecided" where it does not; and the
seed spread a verdict quotes (``seed_spread``) from two seeds."""

from __future__ import annotations

import pytest

from longred_bench.reports.verdict_stats import (
    RunScores,
    mean_over_seeds,
    paired_by_seed,
    seed_diff,
    seed_spread,
)
from longred_bench.reports.verdicts import (
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    REPRODUCED,
    UNDECIDED,
    verdict_cpt_loses_short,
)


def _run(row: str, short: float, seed: int = 0) -> RunScores:
    """Short: 200 documents at ``short`` +-1."""
    docs = {i: short + (i % 3) - 1 for i in range(200)}
    return RunScores("pi:factor=2", row, seed, short, None, short={"General": {"cloze": docs}})


ORIGINAL = _run("original", 50.0)
CPT = [_run("cpt", v, s) for s, v in enumerate((35.0, 45.0, 55.0))]  # seeds far apart


def test_claim_a_is_not_reproduced_where_the_interval_excludes_the_papers_scaled_loss() -> None:
    # t over the 3 seeds (2 degrees of freedom) puts the difference, -5, in about [-30, +20]:
    # it contains 0. The paper's relative loss scales by the original's Short Avg (50): -0.7
    # gives -35, outside the interval (not reproduced); -0.3 gives -15, inside it (undecided).
    far = verdict_cpt_loses_short(ORIGINAL, CPT, "PI x2", "paper", relative=-0.7)
    assert far.label == NOT_REPRODUCED and "The paper's effect, scaled: -35.00." in far.ours
    near = verdict_cpt_loses_short(ORIGINAL, CPT, "PI x2", "paper", relative=-0.3)
    assert near.label == UNDECIDED and "The paper's effect, scaled: -15.00." in near.ours


def test_the_seed_spread_of_two_seeds_is_their_gap() -> None:
    assert seed_spread([_run("cpt", 50.0, 0), _run("cpt", 60.0, 1)]) == 10.0
    assert seed_spread([_run("cpt", 50.0, 0)]) is None
    # Without per-document scores, the tidy values: a seed not evaluated gives no spread of 0
    # from the one value left, and the mean is over the seeds that have a value.
    tidy = [RunScores("pi:factor=2", "cpt", s, v, None) for s, v in enumerate((50.0, 58.0))]
    assert seed_spread(tidy) == 8.0
    lacking = [tidy[0], RunScores("pi:factor=2", "cpt", 1, None, None)]
    assert seed_spread(lacking) is None
    assert mean_over_seeds(lacking, "short_avg") == 50.0
    assert mean_over_seeds(tidy, "short_avg") == 54.0


def test_rows_pair_by_seed_only_on_the_same_distinct_seeds() -> None:
    assert paired_by_seed([0, 1, 2], [2, 0, 1])
    assert not paired_by_seed([0, 1, 2], [0, 1, 5])
    assert not paired_by_seed([0], [0])  # one seed: no spread to take over the differences
    assert not paired_by_seed([0, 0], [0, 0])  # a seed twice: which run pairs with which


def test_one_seed_a_side_and_one_document_a_task_give_no_interval() -> None:
    """Every draw of one seed and one document a task is the estimate: a zero-width interval
    that read "reproduced" from two documents."""

    def run(row: str, score: float, seed: int = 0, docs: int = 1) -> RunScores:
        short = {"General": {t: {i: score for i in range(docs)} for t in ("cloze", "qa")}}
        return RunScores("pi:factor=2", row, seed, score, None, short=short)

    assert seed_diff([run("original", 60.0)], [run("cpt", 40.0)], "short") == (None, 2)
    lone = verdict_cpt_loses_short(run("original", 60.0), [run("cpt", 40.0)], "PI x2", "paper")
    assert lone.label == NOT_COMPARABLE
    assert "2 paired per-document Short score(s), one per task (and length) and seed: " in lone.ours
    seeds = [run("cpt", 40.0), run("cpt", 41.0, seed=1)]  # two seeds: something to resample
    assert seed_diff([run("original", 60.0)], seeds, "short")[0] is not None
    docs = [run("cpt", 40.0, docs=2)]  # two documents a task
    assert seed_diff([run("original", 60.0, docs=2)], docs, "short")[0] is not None
    wide = verdict_cpt_loses_short(run("original", 60.0, docs=2), docs, "PI x2", "paper")
    assert wide.label == REPRODUCED


def test_rows_of_the_same_seeds_are_compared_seed_by_seed_in_any_order() -> None:
    # Seed s moves both rows alike (35, 45, 55 and 37, 47, 57): seed by seed the difference
    # is +2 every time, so the interval is [+2, +2]; listed in another order, the same.
    other = [_run("longred", v + 2.0, s) for s, v in enumerate((35.0, 45.0, 55.0))]
    ci, n = seed_diff(CPT, other, "short")
    assert n == 200 and tuple(ci) == pytest.approx((2.0, 2.0, 2.0), abs=1e-9)
    assert seed_diff(CPT, other[::-1], "short") == (ci, n)
    # Seeds that do not match (0, 1, 2 against 0, 1, 5) are not paired: their spreads count.
    moved = [*other[:2], _run("longred", 57.0, 5)]
    wide, _ = seed_diff(CPT, moved, "short")
    assert wide.estimate == ci.estimate and wide.low < -10.0 and wide.high > 14.0
