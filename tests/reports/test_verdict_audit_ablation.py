"""The claims of LongReD's ablation tables 4-6 (:data:`~longred_bench.reports.ablation_tables.
ABLATIONS`) against the paper's own numbers: each compares the rows its text names, in the
direction the paper's numbers go, on the metric its text names, with the paper's change as its
effect."""

from __future__ import annotations

import pytest

from longred_bench.reports.ablation_tables import ABLATIONS

# The paper's RULER of each profile row (Tables 4-6; the default LongReD-C is 84.98 in each).
PAPER_RULER = {
    "longred-c": 84.98,
    "longred-c-no-s2l": 83.61,
    "longred-c-a2-100": 80.40,
    "longred-c-a1-100": 80.19,
    "longred-c-a1-2": 86.03,
    "longred-c-uniform": 82.53,
    "longred-c-all-layers": 81.47,
    "longred-c-last-layer": 82.24,
    "longred-c-short-eighth": 84.98,
    "longred-c-short-quarter": 83.20,
    "longred-c-short-full": 75.54,
}
CLAIMS = {c.key: c for a in ABLATIONS.values() for c in a.claims}


@pytest.mark.parametrize("key", sorted(k for k, c in CLAIMS.items() if c.what == "ruler"))
def test_a_ruler_claim_goes_the_way_the_papers_rows_go(key: str) -> None:
    claim = CLAIMS[key]
    change = PAPER_RULER[claim.row] / PAPER_RULER[claim.reference] - 1
    assert claim.relative == pytest.approx(change)
    assert claim.sign * change > 0  # the paper's numbers show what the claim says
    assert "RULER" in claim.text and f"{PAPER_RULER[claim.row]:.2f}" in claim.paper


def test_table6_compares_each_length_against_an_eighth_of_the_window() -> None:
    for key, row in (("T6a", "longred-c-short-full"), ("T6b", "longred-c-short-quarter")):
        assert (CLAIMS[key].row, CLAIMS[key].reference, CLAIMS[key].sign) == (
            row, "longred-c-short-eighth", -1,
        )  # fmt: skip


def test_without_l_short_short_text_ability_falls_by_the_papers_two_categories() -> None:
    """T4d is a Short Avg claim (RULER rose without L_short: 84.98 -> 85.48), its effect the
    mean relative fall of the two categories the paper shows: General 67.65 -> 66.54, Common
    72.35 -> 70.64, about -2.0%."""
    claim = CLAIMS["T4d"]
    assert (claim.row, claim.reference, claim.what, claim.sign) == (
        "longred-c-no-short", "longred-c", "short", -1,
    )  # fmt: skip
    assert claim.relative == pytest.approx((-1.11 / 67.65 - 1.71 / 72.35) / 2)
    assert claim.relative == pytest.approx(-0.0200, abs=5e-5)
