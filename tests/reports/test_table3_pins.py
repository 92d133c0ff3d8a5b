"""The paper's Table 3 as the report prints it: every category in the paper's column order,
two decimals, ``-`` where the paper has no number (the original's RULER and Avg, its PE and
data)."""

from __future__ import annotations

from longred_bench.reports.table3 import paper_table


def test_the_papers_rows_read_as_published() -> None:
    lines = paper_table()
    assert lines[0] == (
        "| model | CW | PE | data | method | General | Code | Math | RC | Common | Short Avg "
        "| RULER | Avg |"
    )
    assert lines[2] == (
        "| Llama-3-8B | 8K | - | - | original | 68.18 | 41.20 | 30.12 | 63.78 | 72.54 | 55.16 "
        "| - | - |"
    )
    assert (
        "| Llama-3-8B | 32K | ABF | Mix | LongReD-C | 67.65 | 39.90 | 31.52 | 62.84 | 72.35 "
        "| 54.85 | 84.98 | 59.87 |" in lines
    )
