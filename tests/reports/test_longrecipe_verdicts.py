"""LongRecipe's claims (``longred_bench.reports.longrecipe_verdicts``) on hand-built ``RunScores``:
matching full-length training needs a full-length run that learned something and an interval
above a margin of a quarter of what it learned; beating PoSE and RPES needs both intervals above
0; the compute claim reads the measured cost per sequence."""

from __future__ import annotations

from longred_bench.reports.longrecipe_verdicts import (
    MATCH_FRACTION,
    verdict_beats,
    verdict_compute,
    verdict_matches_full_length,
)
from longred_bench.reports.verdict_stats import RunScores
from longred_bench.reports.verdicts import NOT_COMPARABLE, NOT_REPRODUCED, REPRODUCED


def _run(row: str, short: float, ruler_hits: int, seed: int = 0) -> RunScores:
    """Short: 200 documents at ``short`` +-1; RULER: the first ``ruler_hits`` of 100 samples."""
    docs = {i: short + (i % 3) - 1 for i in range(200)}
    per = {i: 100.0 if i < ruler_hits else 0.0 for i in range(100)}
    return RunScores(
        "abf:theta=2e6", row, seed, short, float(ruler_hits),
        short={"General": {"cloze": docs}}, ruler={"niah_single_1": {1024: per}},
    )  # fmt: skip


def _seeds(row: str, short: float, hits: int) -> list[RunScores]:
    return [_run(row, short, hits, s) for s in range(3)]


def test_matching_full_length_needs_its_premise_and_a_margin_of_cpts_gain() -> None:
    zero, cpt = _seeds("zero-shot", 50, 2), _seeds("cpt", 50, 30)  # gain 28: margin 7
    near = verdict_matches_full_length(_seeds("longrecipe", 50, 29), cpt, zero, "s")
    assert near.label == REPRODUCED and "= 7.00" in near.ours
    # Far below full-length training: the interval lies below -7.
    far = verdict_matches_full_length(_seeds("longrecipe", 50, 5), cpt, zero, "s")
    assert far.label == NOT_REPRODUCED
    # 8 points below, on 100 samples: the interval straddles -7, the samples cannot tell.
    across = verdict_matches_full_length(_seeds("longrecipe", 50, 22), cpt, zero, "s")
    assert across.label == NOT_COMPARABLE and f"{MATCH_FRACTION:g} x that gain" in across.rule
    # Full-length training learned nothing over zero-shot: nothing to match.
    flat = verdict_matches_full_length(_seeds("longrecipe", 50, 3), _seeds("cpt", 50, 3), zero, "s")
    assert flat.label == NOT_COMPARABLE and "Nothing learned to match" in flat.ours


def test_beating_pose_and_rpes_needs_both_intervals_above_zero() -> None:
    base = {"pose": _seeds("pose", 50, 5), "rpes": _seeds("rpes", 50, 5)}
    mine = _seeds("longrecipe", 53, 30)
    assert verdict_beats(mine, base, "s", "ruler").label == REPRODUCED
    assert verdict_beats(mine, base, "s", "short").label == REPRODUCED
    base["rpes"] = _seeds("rpes", 53, 30)
    ruler, short = verdict_beats(mine, base, "s", "ruler"), verdict_beats(mine, base, "s", "short")
    assert (ruler.key, ruler.label) == ("R2", NOT_REPRODUCED)
    assert (short.key, short.label) == ("R3", NOT_REPRODUCED)
    bare = {"pose": [RunScores("abf:theta=2e6", "pose", 0, 50.0, 1.0)]}
    assert verdict_beats(mine, bare, "s", "ruler").label == NOT_COMPARABLE


def test_compute_is_judged_per_sequence_at_twice_the_papers_share() -> None:
    assert verdict_compute(0.28, "s", "t").label == REPRODUCED
    assert verdict_compute(0.9, "s", "t").label == NOT_REPRODUCED
    assert verdict_compute(None, "s", "t").label == NOT_COMPARABLE
