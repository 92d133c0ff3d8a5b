"""Claim (b) of ``longred_bench.reports.verdicts`` on hand-built ``RunScores``: gated on the
premises (a) and (e), RULER by non-inferiority with a margin relative to CPT's gain, Short Avg by
the shared judge, and each label."""

from __future__ import annotations

from longred_bench.reports.verdict_rules import Verdict
from longred_bench.reports.verdicts import (
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    REPRODUCED,
    UNDECIDED,
    RunScores,
    verdict_longred_keeps_short,
)


def premise(key: str, label: str = REPRODUCED) -> Verdict:
    return Verdict(key, "claim", "s", "p", "o", label, "r")


OK = [premise("a"), premise("e")]


def _scores(row: str, short: float, ruler: float, seed: int = 0, spread: float = 1.0,
            shift: int = 0):  # fmt: skip
    """A run whose documents score ``short`` +- ``spread`` (a 3-cycle starting at ``shift``: a
    shifted run's per-document differences vary) and RULER ``ruler``."""
    docs = {i: short + spread * (((i + shift) % 3) - 1) for i in range(60)}
    return RunScores(
        "abf:theta=4e5", row, seed, short, ruler,
        short={"General": {"cloze": docs}},
        ruler={"niah_single_1": {1024: {i: ruler + (i % 2) for i in range(20)}}},
    )  # fmt: skip


def judge(base: list, longred: list, premises=OK, gain: float = 20.0, recovered=None,
          original=()) -> Verdict:  # fmt: skip
    return verdict_longred_keeps_short(base, longred, "s", "p", "C", premises=premises,
                                       cpt_gain=gain, recovered=recovered,
                                       original=original)  # fmt: skip


def test_claim_b_is_not_comparable_when_a_premise_fails() -> None:
    cpt, longred = [_scores("cpt", 20.0, 30.0)], [_scores("longred-c", 40.0, 30.0)]
    assert judge(cpt, longred).label == REPRODUCED
    v = judge(cpt, longred, premises=[premise("a", NOT_REPRODUCED), premise("e")])
    assert v.label == NOT_COMPARABLE
    assert "(a) not reproduced, (e) reproduced" in v.premise and "not comparable" in v.premise
    assert judge(cpt, longred, premises=[premise("a"), premise("e", UNDECIDED)]).label == (
        NOT_COMPARABLE
    )
    assert judge(cpt, longred, premises=[]).label == NOT_COMPARABLE  # premises not measured


def test_claim_b_ruler_non_inferiority_margin_is_a_quarter_of_cpts_gain() -> None:
    cpt = [_scores("cpt", 20.0, 30.0)]
    # RULER 3 points lower, Short far higher: within a margin of 0.25 x 20 = 5 -> reproduced ...
    assert judge(cpt, [_scores("longred-c", 40.0, 27.0)], gain=20.0).label == REPRODUCED
    # ... beyond a margin of 0.25 x 8 = 2 -> the long part fails: not reproduced.
    v = judge(cpt, [_scores("longred-c", 40.0, 27.0)], gain=8.0)
    assert v.label == NOT_REPRODUCED and "long part not reproduced" in v.rule
    assert "margin 2.00 (0.25 x CPT's RULER gain 8.00)" in v.ours


def test_claim_b_short_part_labels() -> None:
    cpt = [_scores("cpt", 20.0, 30.0)]
    assert judge(cpt, [_scores("longred-c", 15.0, 30.0)]).label == NOT_REPRODUCED  # below 0
    # Short within noise of CPT's (wide documents): undecided, unless the interval rules out the
    # paper's effect: the paper's fraction of CPT's loss recovered (90%) x CPT's loss here.
    wide = [_scores("longred-c", 20.2, 30.0, spread=30.0, shift=1)]
    assert judge([_scores("cpt", 20.0, 30.0, spread=30.0)], wide).label == UNDECIDED
    narrow = [_scores("longred-c", 20.0, 30.0, spread=1.0, shift=1)]
    base = [_scores("cpt", 20.0, 30.0, spread=1.0)]
    assert judge(base, narrow).label == UNDECIDED
    lost = [_scores("original", 23.0, 0.0, spread=1.0, shift=2)]  # CPT lost 3 points
    v = judge(base, narrow, recovered=0.9, original=lost)
    assert v.label == NOT_REPRODUCED  # the interval around 0 excludes 0.9 x 3 = +2.70
    assert "The paper's effect, scaled: +2.70 (90% of `cpt`'s loss" in v.ours
    # Where CPT lost nothing here, the paper's effect bounds nothing: the same interval is
    # undecided, however large the paper's fraction (scaling by CPT's level would refute it).
    kept = [_scores("original", 19.5, 0.0, spread=1.0, shift=2)]
    v = judge(base, narrow, recovered=0.9, original=kept)
    assert v.label == UNDECIDED and "`cpt` lost no Short Avg here" in v.ours


def test_claim_b_seeds_enter_once_through_the_interval() -> None:
    cpt = [_scores("cpt", 20.0, 30.0, seed=s) for s in range(3)]
    agree = [_scores("longred-c", 24.0 + s / 10, 30.0, seed=s) for s in range(3)]
    assert judge(cpt, agree).label == REPRODUCED
    disagree = [_scores("longred-c", v, 30.0, seed=s) for s, v in enumerate((32.0, 20.0, 20.0))]
    v = judge(cpt, disagree)
    assert v.label == UNDECIDED and "(mean of 3 seeds)" in v.ours


def test_an_interval_too_wide_for_the_margin_says_so() -> None:
    """A row equal to CPT with noisy RULER samples: the interval straddles the margin, so the
    long part is undecided, and the evidence says the sample size cannot resolve it."""

    def noisy(row: str, seed: int) -> RunScores:
        ruler = {i: 100.0 * ((i + seed) % 2) for i in range(20)}
        return RunScores("abf:theta=4e5", row, seed, 40.0, 50.0,
                         short={"General": {"cloze": {i: 40.0 + i % 3 for i in range(60)}}},
                         ruler={"niah_single_1": {1024: ruler}})  # fmt: skip

    cpt, same = [noisy("cpt", 0)], [noisy("longred-c", 1)]
    v = judge(cpt, same, gain=4.0)  # margin 1: far inside the interval's half-width
    assert "long part undecided" in v.rule
    assert "Resolution: the interval's half-width" in v.ours and "margin 1.00" in v.ours
    wide = judge(cpt, same, gain=400.0)  # margin 100: resolved, reproduced, no such sentence
    assert "long part reproduced" in wide.rule and "Resolution" not in wide.ours
