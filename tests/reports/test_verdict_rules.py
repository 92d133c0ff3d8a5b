"""The shared verdict vocabulary: each label of :func:`judge` on both sides, the paper's effect
rule, :func:`combine` and the premise gate."""

import pytest

from longred_bench.metrics.stats import Interval
from longred_bench.reports.verdict_rules import (
    ABOVE,
    BELOW,
    LABELS,
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    REPRODUCED,
    UNDECIDED,
    Verdict,
    combine,
    fmt_interval,
    judge,
    long_margin,
    premise_gate,
    scaled_effect,
    signed,
)


def ci(low: float, high: float) -> Interval:
    return Interval((low + high) / 2, low, high)


@pytest.mark.parametrize(
    ("interval", "side", "paper", "label"),
    [
        ((-3.0, -1.0), BELOW, None, REPRODUCED),
        ((1.0, 2.0), BELOW, None, NOT_REPRODUCED),
        ((-1.0, 1.0), BELOW, None, UNDECIDED),
        # the paper's effect (-3.4) lies below the interval: ruled out -> not reproduced
        ((-1.11, 1.61), BELOW, -3.4, NOT_REPRODUCED),
        ((-4.0, 1.0), BELOW, -3.4, UNDECIDED),
        ((1.0, 3.0), ABOVE, None, REPRODUCED),
        ((-3.0, -1.0), ABOVE, None, NOT_REPRODUCED),
        ((-0.5, 0.8), ABOVE, 2.0, NOT_REPRODUCED),
        ((-0.5, 2.5), ABOVE, 2.0, UNDECIDED),
        # a paper effect on the wrong side of the bound changes nothing
        ((-0.5, 0.8), ABOVE, -2.0, UNDECIDED),
        ((-3.0, -2.5), ABOVE, -2.0, NOT_REPRODUCED),
    ],
)
def test_judge_labels_each_case(interval, side, paper, label):
    assert judge(ci(*interval), side, paper=paper) == label


def test_judge_with_a_non_inferiority_bound():
    margin = long_margin(8.0)  # a quarter of CPT's gain
    assert margin == 2.0
    assert judge(ci(-1.5, 3.0), ABOVE, bound=-margin) == REPRODUCED
    assert judge(ci(-6.0, -2.5), ABOVE, bound=-margin) == NOT_REPRODUCED
    assert judge(ci(-3.0, 1.0), ABOVE, bound=-margin) == UNDECIDED
    assert long_margin(-1.0) == 0.0


def test_judge_rejects_a_bad_side():
    with pytest.raises(ValueError):
        judge(ci(0, 1), 0)


def test_combine_orders_the_labels():
    assert combine([REPRODUCED, REPRODUCED]) == REPRODUCED
    assert combine([REPRODUCED, UNDECIDED]) == UNDECIDED
    assert combine([UNDECIDED, NOT_REPRODUCED]) == NOT_REPRODUCED
    # One refuted part refutes a claim whose parts must all hold, whatever the others say.
    assert combine([NOT_REPRODUCED, NOT_COMPARABLE]) == NOT_REPRODUCED
    assert combine([UNDECIDED, NOT_COMPARABLE]) == NOT_COMPARABLE
    with pytest.raises(ValueError):
        combine([])


def test_premise_gate_passes_only_when_every_premise_is_reproduced():
    def v(key: str, label: str) -> Verdict:
        return Verdict(key, "c", "s", "p", "o", label, "r")

    ok, text = premise_gate([v("a", REPRODUCED), v("e", REPRODUCED)])
    assert ok and "(a) reproduced, (e) reproduced: passed" in text
    ok, text = premise_gate([v("a", UNDECIDED), v("e", REPRODUCED)])
    assert not ok and "not comparable" in text


def test_scaled_effect_keeps_the_relative_change():
    assert scaled_effect(-5.0, 50.0, 30.0) == pytest.approx(-3.0)
    with pytest.raises(ValueError):
        scaled_effect(1.0, 0.0, 1.0)


def test_labels_are_the_four_and_verdict_rejects_others():
    assert LABELS == (REPRODUCED, NOT_REPRODUCED, UNDECIDED, NOT_COMPARABLE)
    with pytest.raises(ValueError):
        Verdict("a", "c", "s", "p", "o", "holds", "r")


@pytest.mark.parametrize("interval", [(float("nan"), 1.0), (-1.0, float("nan"))])
def test_judge_refuses_an_interval_with_a_nan_bound(interval):
    """No samples behind an interval is a missing measurement, never "undecided"."""
    with pytest.raises(ValueError, match="NaN bound"):
        judge(Interval(0.0, *interval), BELOW)


def test_recovered_effect_is_the_papers_fraction_of_the_baselines_loss_here() -> None:
    from longred_bench.reports.verdict_rules import recovered_effect
    from longred_bench.reports.verdicts import paper_recovered_b

    assert recovered_effect(0.5, 60.0, 56.0) == pytest.approx(2.0)
    assert recovered_effect(0.5, 56.0, 56.0) is None  # nothing lost: nothing to recover
    assert recovered_effect(0.5, 55.0, 56.0) is None
    assert recovered_effect(None, 60.0, 56.0) is None
    # Llama-3-8B 32K ABF: LongReD-C 54.85 recovers (54.85 - 51.00) / (55.16 - 51.00) of long
    # CPT's loss; Mistral 128K ABF (also x4): (46.30 - 40.68) / (51.09 - 40.68). Their mean:
    both = ((54.85 - 51.00) / (55.16 - 51.00) + (46.30 - 40.68) / (51.09 - 40.68)) / 2
    assert paper_recovered_b("ABF", 4.0, "LongReD-C", "Long") == pytest.approx(both)
    assert paper_recovered_b("ABF", 4.0, "LongReD-C", None) is None
    assert paper_recovered_b("PI", 3.0, "LongReD-C", "Long") is None  # no such setting


@pytest.mark.parametrize(
    ("value", "digits", "text"),
    [
        (1.234, 2, "+1.23"),
        (0.0, 3, "+0.000"),
        (-0.0004, 3, "-0.0004"),
        (0.00004, 2, "+0.00004"),
        (-2e-7, 3, "-2.0e-07"),
        (-0.0004, 2, "-0.0004"),
        (-0.0, 2, "+0.00"),  # a zero difference computed as -0.0
    ],
)
def test_a_signed_value_that_is_not_zero_never_reads_zero(value, digits, text):
    assert signed(value, digits) == text


def test_an_interval_shows_a_small_negative_end_as_negative():
    assert fmt_interval(Interval(0.01, -0.0003, 0.02), 3) == "+0.010 [-0.0003, +0.020]"
