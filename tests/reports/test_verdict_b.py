"""Claim (b) of ``longred_bench.reports.verdicts`` on hand-built ``RunScores``: the RULER floor,
a LongReD at least as good on both axes (credited), a worse RULER (not comparable) and a RULER
difference within the RULER seed spread (similar)."""

from __future__ import annotations

from longred_bench.reports.verdicts import (
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    REPRODUCED,
    RunScores,
    verdict_longred_keeps_short,
)


def test_claim_b_at_the_ruler_floor_is_not_comparable() -> None:
    def run(row: str, short: float, ruler: float) -> RunScores:
        docs = {i: short + (i % 3) for i in range(60)}
        return RunScores(
            "abf:theta=4e5", row, 0, short + 1, ruler,
            short={"General": {"cloze": docs}},
            ruler={"niah_single_1": {1024: {i: ruler for i in range(20)}}},
        )  # fmt: skip

    def label(ruler: float) -> str:
        cpt, longred = run("cpt", 20.0, ruler), run("longred-c", 40.0, ruler)
        return verdict_longred_keeps_short([cpt], [longred], "s", "p", "LongReD-C").label

    assert label(0.0) == NOT_COMPARABLE  # no long-context ability on either side
    assert label(50.0) == REPRODUCED  # the same short-text gain at a real, equal RULER score


def _scores(row: str, short: float, ruler: float, seed: int = 0, n_docs: int = 60) -> RunScores:
    """A run whose documents all score ``short`` (Short) and ``ruler`` (RULER) but for a small
    +-1 pattern on Short, so the document bootstrap has something to resample."""
    docs = {i: short + (i % 3) - 1 for i in range(n_docs)}
    return RunScores(
        "abf:theta=4e5", row, seed, short, ruler,
        short={"General": {"cloze": docs}},
        ruler={"niah_single_1": {1024: {i: ruler for i in range(20)}}},
    )  # fmt: skip


def test_claim_b_dominance_is_reproduced_and_worse_ruler_not_comparable() -> None:
    cpt = [_scores("cpt", 20.0, 20.0)]
    # LongReD far ahead on RULER (+40, interval above 0, beyond the margin) and on Short.
    better = verdict_longred_keeps_short(cpt, [_scores("longred-c", 40.0, 60.0)], "s", "p", "C")
    assert better.label == REPRODUCED and better.key == "b"
    assert "at least as good" in better.rule and "RULER higher by +40.00" in better.rule
    # Ahead on RULER but not on Short: not reproduced (judged, not set aside).
    flat = verdict_longred_keeps_short(cpt, [_scores("longred-c", 20.0, 60.0)], "s", "p", "C")
    assert flat.label == NOT_REPRODUCED
    # Far behind on RULER (-15, interval below 0) with more Short: the gain may be bought.
    worse = verdict_longred_keeps_short(
        [_scores("cpt", 20.0, 30.0)], [_scores("longred-c", 40.0, 15.0)], "s", "p", "C"
    )
    assert worse.label == NOT_COMPARABLE
    assert "RULER lower by -15.00" in worse.rule and "interval entirely below 0" in worse.rule


def test_claim_b_ruler_within_the_ruler_seed_spread_counts_as_similar() -> None:
    cpt = [_scores("cpt", 20.0, 30.0, seed=s) for s in range(3)]
    # LongReD's RULER over its seeds: 0, 24, 24 (mean 16, spread 24). The difference -14 is
    # beyond the 5-point margin and every seed resample stays below CPT's 30 (interval below 0),
    # but retraining alone moves LongReD's RULER by 24 points: RULER counts as similar.
    spread = [_scores("longred-c", 40.0 + s / 10, r, seed=s) for s, r in enumerate((0, 24, 24))]
    v = verdict_longred_keeps_short(cpt, spread, "s", "p", "C")
    assert v.label == REPRODUCED
    assert "within the RULER seed spread 24.00" in v.rule
    assert "Seed spread (RULER, max - min): `cpt` 0.00, `longred-c` 24.00." in v.ours
    assert "(mean of 3 seeds)" in v.ours
    # The same mean RULER with no seed spread (one value repeated): worse, not comparable.
    steady = [_scores("longred-c", 40.0 + s / 10, 16.0, seed=s) for s in range(3)]
    assert verdict_longred_keeps_short(cpt, steady, "s", "p", "C").label == NOT_COMPARABLE
