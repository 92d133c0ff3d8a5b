"""``psa.md``'s per-length table and its notes: the median and the mean gold rank in their own
columns, the mean gold probability at three decimals from 0.0005 up (scientific below), and
the count of samples longer than their model's window summed over every line and length."""

from __future__ import annotations

from longred_bench.reports.psa_report import probability_text, psa_markdown


def _rows(extension: str, length: int, ranks: list[int], beyond: bool) -> list[dict]:
    return [{"kind": "psa_sample", "extension": extension, "task": "niah_single_2",
             "length": length, "rank": r, "probability": 1.0 / r, "reciprocal_rank": 1.0 / r,
             "mean_reciprocal_rank_all": 1.0 / r, "needle_depth": 50.0,
             "needle_distance": length // 2, "beyond_window": beyond}
            for r in ranks]  # fmt: skip


def test_ranks_in_their_columns_and_every_sample_past_its_window_counted() -> None:
    records = (_rows("pi:factor=4", 512, [1, 1, 2, 12], False)
               + _rows("pi:factor=4", 2048, [1, 2, 3, 30], True)
               + _rows("abf:theta=1e6", 2048, [1, 1, 1, 1, 1], True))  # fmt: skip
    md = psa_markdown(records, "t")
    row = next(x for x in md.splitlines() if x.startswith("| pi:factor=4 | 2048 | 4 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[5:7] == ["2.5", "9.0"]  # median rank of 1, 2, 3, 30; their mean
    assert cells[7] == "0.75"  # three of four within the top 10
    # 4 samples of one line and 5 of another at 2,048 tokens: 9 past their windows
    assert "9 sample(s) are longer than their model's window." in md


def test_a_probability_of_0_0005_reads_with_three_decimals() -> None:
    assert probability_text(0.0005) == "0.001"
    assert probability_text(0.00049) == "4.9e-04"
    assert probability_text(0.0) == "0.000"
