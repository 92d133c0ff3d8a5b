"""The paper's evidence each ablation claim quotes: RULER of the reference (LongReD-C's default
setting), then of the ablated row, as Tables 4-6 print them; and
the paper's tables with their two decimals."""

from __future__ import annotations

from longred_bench.reports.ablation_tables import ABLATIONS


def _paper(table: str, key: str) -> str:
    return next(c.paper for c in ABLATIONS[table].claims if c.key == key)


def test_each_claim_quotes_the_reference_then_the_ablated_row() -> None:
    assert _paper("table4", "T4a") == "RULER 84.98 -> 83.61 ([sec])."
    assert _paper("table4", "T4e") == "RULER 84.98 -> 86.03 ([sec])."
    assert _paper("table5", "T5c") == "RULER 84.98 -> 82.24 ([sec])."
    assert _paper("table6", "T6a") == "RULER 84.98 -> 75.54 ([sec])."
    assert _paper("table6", "T6b") == "RULER 84.98 -> 83.20 ([sec])."


def test_the_paper_tables_keep_two_decimals() -> None:
    assert "| a2 = 100 | 80.40 |  |" in ABLATIONS["table4"].paper
    assert "| uniform (6) + last | 82.53 |" in ABLATIONS["table5"].paper
    assert "| 2,048 (1/4) | 83.20 |" in ABLATIONS["table6"].paper
