"""Pinned behaviour of the shared verdict rules (:mod:`longred_bench.reports.verdict_rules`) that
the other verdict tests leave open or pin only through a report: :func:`judge` at an interval
end exactly on the bound or on the paper's effect, and with a nonzero bound below; the
sentences of :func:`recovered_text` and :func:`floor_text`; and what :func:`verdicts_markdown`
writes (the label rule, a verdict's premise line, the line for no verdicts)."""

from __future__ import annotations

import pytest

from longred_bench.metrics.stats import Interval
from longred_bench.reports.verdict_rules import (
    ABOVE,
    BELOW,
    LABEL_RULE,
    NOT_REPRODUCED,
    REPRODUCED,
    UNDECIDED,
    Verdict,
    floor_text,
    judge,
    recovered_text,
    verdicts_markdown,
)


def _ci(low: float, high: float) -> Interval:
    """The interval ``[low, high]`` around its midpoint."""
    return Interval((low + high) / 2, low, high)


@pytest.mark.parametrize(
    ("low", "high", "side", "label"),
    [
        (0.0, 1.0, ABOVE, UNDECIDED),  # touching the bound does not clear it
        (-1.0, 0.0, ABOVE, UNDECIDED),  # nor lie on its wrong side
        (-1.0, 0.0, BELOW, UNDECIDED),
        (0.0, 1.0, BELOW, UNDECIDED),
    ],
)
def test_judge_an_interval_ending_on_the_bound_is_undecided(low, high, side, label) -> None:
    """The bound must be excluded, strictly, for either decided label."""
    assert judge(_ci(low, high), side) == label


def test_judge_with_a_bound_below() -> None:
    """ "Below 2": an interval under 2 holds the claim even where it lies above 0, and one over
    2 refutes it; an interval holding 2 is undecided."""
    assert judge(_ci(0.5, 1.5), BELOW, bound=2.0) == REPRODUCED
    assert judge(_ci(2.5, 3.0), BELOW, bound=2.0) == NOT_REPRODUCED
    assert judge(_ci(-3.0, -2.5), BELOW, bound=-2.0) == REPRODUCED
    assert judge(_ci(1.0, 3.0), BELOW, bound=2.0) == UNDECIDED
    # the paper's effect (1.0, on the claim's side of 2) rules out an interval above it
    assert judge(_ci(1.2, 2.5), BELOW, bound=2.0, paper=1.0) == NOT_REPRODUCED
    # one reaching below the paper's effect keeps it: undecided
    assert judge(_ci(0.5, 2.5), BELOW, bound=2.0, paper=1.0) == UNDECIDED


@pytest.mark.parametrize("side", [ABOVE, BELOW])
def test_judge_an_interval_ending_on_the_papers_effect_keeps_it(side: int) -> None:
    """An interval that holds the bound and ends exactly at the paper's effect has not ruled
    that effect out: undecided, on either side."""
    reaching = sorted((-0.5 * side, 2.0 * side))
    assert judge(_ci(*reaching), side, paper=2.0 * side) == UNDECIDED
    short = sorted((-0.5 * side, 1.9 * side))
    assert judge(_ci(*short), side, paper=2.0 * side) == NOT_REPRODUCED


def test_recovered_text_is_empty_without_a_papers_fraction() -> None:
    """No fraction from the paper: no sentence, whatever the scores."""
    assert recovered_text(None, 60.0, 56.0, "`cpt`") == ""
    assert recovered_text(None, None, None, "`cpt`") == ""


def test_recovered_text_says_when_the_original_is_missing() -> None:
    """Either score unknown: the effect is said not to be scaled."""
    expected = " The paper's effect is not scaled here: the original's scores are missing."
    assert recovered_text(0.5, None, 56.0, "`cpt`") == expected
    assert recovered_text(0.5, 60.0, None, "`cpt`") == expected


def test_recovered_text_states_the_scaled_effect_or_that_nothing_was_lost() -> None:
    """A loss here: the scaled effect; a gain: that the paper's effect bounds nothing."""
    assert recovered_text(0.5, 60.0, 56.0, "`cpt`") == (
        " The paper's effect, scaled: +2.00 (50% of `cpt`'s loss against the original, 4.00 "
        "here, recovered as in the paper)."
    )
    assert recovered_text(0.5, 56.0, 57.5, "`cpt`") == (
        " `cpt` lost no Short Avg here (+1.50 against the original), so the paper's effect (a "
        "fraction of its baseline's loss) bounds nothing."
    )


def test_floor_text_shows_each_known_mean_at_two_decimals() -> None:
    """Unknown means are left out; the floor is written without decimals."""
    assert floor_text(3.456, None, 4.0) == " RULER 3.46, 4.00: all below the floor of 5 points."


def _verdict(key: str, premise: str = "") -> Verdict:
    """A reproduced paper claim ``key`` with fixed evidence and an optional premise line."""
    return Verdict(key, "A beats B", "`x`", "paper 1", "ours 2", REPRODUCED, "rule 3",
                   premise=premise)  # fmt: skip


def test_markdown_without_verdicts_says_why() -> None:
    """No verdicts: one line saying the compared rows are missing, not an empty table."""
    assert verdicts_markdown([]) == [
        "No claim could be checked: the rows a claim compares are missing.",
        "",
    ]


def test_markdown_states_the_label_rule_and_a_premise_where_there_is_one() -> None:
    """The table, then the label rule, then each verdict's evidence; a premise line only where
    the verdict has a premise."""
    lines = verdicts_markdown([_verdict("a"), _verdict("b", premise="premises (a) reproduced")])
    assert lines[:4] == [
        "| claim | setting | verdict | source |",
        "|---|---|---|---|",
        "| (a) A beats B | `x` | **reproduced** | paper |",
        "| (b) A beats B | `x` | **reproduced** | paper |",
    ]
    assert lines[4:7] == ["", LABEL_RULE, ""]
    assert "- Premise: premises (a) reproduced" in lines
    assert sum(line.startswith("- Premise:") for line in lines) == 1
    first = lines.index("**(a) `x`: reproduced.** A beats B")
    assert lines[first + 1 : first + 6] == ["", "- Paper: paper 1", "- Ours: ours 2",
                                            "- Rule: rule 3", ""]  # fmt: skip
