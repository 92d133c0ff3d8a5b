"""LongRecipe's claims (``longred_bench.reports.longrecipe_verdicts``) on hand-built ``RunScores``:
matching full-length training needs a full-length run that learned something and an interval
above the margin; beating PoSE and RPES needs both intervals above 0; the compute claim reads
the measured ratio and the attention share of a token's FLOPs."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from longred_bench.reports.longrecipe_verdicts import (
    MATCH_MARGIN,
    attention_flop_share,
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


def test_matching_full_length_needs_its_premise_and_the_margin() -> None:
    zero, cpt = _seeds("zero-shot", 50, 2), _seeds("cpt", 50, 30)
    assert verdict_matches_full_length(_seeds("longrecipe", 50, 29), cpt, zero, "s").label == (
        REPRODUCED
    )
    # Far below full-length training: the interval lies below -MARGIN.
    far = verdict_matches_full_length(_seeds("longrecipe", 50, 5), cpt, zero, "s")
    assert far.label == NOT_REPRODUCED and f"-{MATCH_MARGIN:g}" in far.rule
    # Full-length training learned nothing over zero-shot: nothing to match.
    flat = verdict_matches_full_length(_seeds("longrecipe", 50, 3), _seeds("cpt", 50, 3), zero, "s")
    assert flat.label == NOT_COMPARABLE and "learned no long ability" in flat.ours


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


def test_attention_share_by_hand_and_the_compute_rule() -> None:
    # hidden 4, 1 layer, 2 heads of 2 dims, 1 KV head, MLP 8, vocab 10, 6 tokens:
    # projections 4*2*(4+2) + 3*4*8 = 144, scores 2*2*2*6/2 = 24, head 40: 24 / 208.
    cfg = SimpleNamespace(hidden_size=4, num_hidden_layers=1, num_attention_heads=2,
                          num_key_value_heads=1, intermediate_size=8, vocab_size=10)  # fmt: skip
    assert attention_flop_share(cfg, 6) == pytest.approx(24 / 208)
    assert attention_flop_share(cfg, 6000) > 0.9
    assert verdict_compute(0.2, 0.1, "s", "t").label == REPRODUCED
    assert verdict_compute(0.9, 0.26, "s", "t").label == NOT_COMPARABLE
    assert verdict_compute(0.9, 0.8, "s", "t").label == NOT_REPRODUCED
    assert verdict_compute(None, 0.8, "s", "t").label == NOT_COMPARABLE
