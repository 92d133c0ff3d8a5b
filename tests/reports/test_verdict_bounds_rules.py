"""Boundaries of the shared verdict rules (:mod:`longred_bench.reports.verdict_rules`) and of
claim (b) (:func:`~longred_bench.reports.verdicts.verdict_longred_keeps_short`) that the other
verdict tests leave open: the resolution sentence at a half-width equal to the margin, and the
RULER floor of (b) needing both rows below it, the sample size each part of (b) states, and the
paper's relative change behind claim (a)'s scaled effect."""

from __future__ import annotations

import pytest

from longred_bench.metrics.stats import Interval
from longred_bench.reports.verdict_rules import Verdict, margin_resolution
from longred_bench.reports.verdicts import (
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    REPRODUCED,
    RunScores,
    paper_relative_a,
    verdict_longred_keeps_short,
)

OK = [Verdict(k, "claim", "s", "p", "o", REPRODUCED, "r") for k in ("a", "e")]


def _scores(row: str, short: float, ruler: float, shift: int = 0) -> RunScores:
    """A run whose 60 documents score ``short`` +-1 and whose 20 RULER samples score
    ``ruler`` or ``ruler + 1``."""
    docs = {i: short + (((i + shift) % 3) - 1) for i in range(60)}
    return RunScores(
        "abf:theta=4e5", row, 0, short, ruler,
        short={"General": {"cloze": docs}},
        ruler={"niah_single_1": {1024: {i: ruler + (i % 2) for i in range(20)}}},
    )  # fmt: skip


def test_resolution_sentence_at_a_half_width_equal_to_the_margin() -> None:
    # "with a half-width of at least margin": exactly the margin already cannot resolve it.
    assert "half-width 2.00 is at least the margin 2.00" in margin_resolution(
        Interval(0.0, -2.0, 2.0), 2.0
    )
    assert margin_resolution(Interval(0.0, -1.5, 1.5), 2.0) == ""


def test_claim_b_floor_needs_both_rows_below_it() -> None:
    # CPT's RULER (10) is above the floor of 5, LongReD's (3) below it: the floor does not
    # apply, and 7 points lost against a margin of 0.25 x 20 = 5 refute the long part.
    cpt, longred = [_scores("cpt", 20.0, 10.0)], [_scores("longred-c", 40.0, 3.0, shift=1)]
    v = verdict_longred_keeps_short(cpt, longred, "s", "p", "C", premises=OK, cpt_gain=20.0)
    assert v.label == NOT_REPRODUCED
    assert "long part not reproduced, short part reproduced" in v.rule
    assert "below the floor" not in v.ours


def test_claim_b_states_each_parts_own_sample_size() -> None:
    cpt, longred = [_scores("cpt", 20.0, 30.0)], [_scores("longred-c", 40.0, 30.0, shift=1)]
    v = verdict_longred_keeps_short(cpt, longred, "s", "p", "C", premises=OK, cpt_gain=20.0)
    assert v.label == REPRODUCED
    assert "(n=60 documents)" in v.ours and "(n=20 samples)" in v.ours


def test_claim_a_papers_relative_change_is_against_the_original() -> None:
    # Table 3, Llama-3-8B 32K PI: long-only CPT 49.36 against the original's 55.16.
    assert paper_relative_a("PI", 4.0) == pytest.approx((49.36 - 55.16) / 55.16)
    # ABF x4 matches Llama-3-8B 32K (51.00 vs 55.16) and Mistral 128K (40.68 vs 51.09): the mean.
    both = ((51.00 - 55.16) / 55.16 + (40.68 - 51.09) / 51.09) / 2
    assert paper_relative_a("ABF", 4.0) == pytest.approx(both)
    assert paper_relative_a("ABF", 8.0) is None


def _one_ruler_sample(row: str, short: float, ruler: float) -> RunScores:
    """A run of 60 scored documents and one RULER sample (nothing to resample there)."""
    docs = {i: short + (i % 3) - 1 for i in range(60)}
    return RunScores("abf:theta=4e5", row, 0, short, ruler, short={"General": {"cloze": docs}},
                     ruler={"niah_single_1": {1024: {0: ruler}}})  # fmt: skip


def test_claim_b_a_part_without_an_interval_does_not_hide_a_refuted_part() -> None:
    """One RULER sample gives the long part no interval; the short part, 20 points below CPT on
    60 paired documents, refutes the claim on its own (it read "not comparable")."""
    cpt, longred = [_one_ruler_sample("cpt", 40.0, 30.0)], [_one_ruler_sample("lr", 20.0, 30.0)]
    v = verdict_longred_keeps_short(cpt, longred, "s", "p", "C", premises=OK, cpt_gain=20.0)
    assert v.label == NOT_REPRODUCED
    assert "long part not comparable, short part not reproduced" in v.rule
    assert "1 paired per-sample RULER score(s)" in v.ours and "(n=60 documents)" in v.ours
    up = [_one_ruler_sample("lr", 60.0, 30.0)]  # the short part holds: the missing part decides
    v = verdict_longred_keeps_short(cpt, up, "s", "p", "C", premises=OK, cpt_gain=20.0)
    assert v.label == NOT_COMPARABLE
    assert "long part not comparable, short part reproduced" in v.rule
