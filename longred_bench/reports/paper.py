"""Published numbers of the papers, for the side-by-side columns of the reports.

Marks follow PAPER_TABLES: ``[sec]`` = from secondary write-ups of arXiv 2502.07365 v3, still to be
checked against the PDF; ``[fig]`` = read from the table image in the LongReD repository.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Table1Row:
    """One row of LongReD Table 1: drift before -> after continued pre-training (~1B tokens)."""

    model: str
    rope_base: float
    hidden_before: float
    hidden_after: float
    kl_before_1e5: float
    kl_after_1e5: float


TABLE1_MARK = "[sec]"
TABLE1_SETTING = "Llama-3-8B family, 1,000 texts of 8,192 tokens"
TABLE1 = (
    Table1Row("Llama-3-8B-32K", 2e7, 0.92, 0.95, 3.51, 1.51),
    Table1Row("Llama-3-8B-128K", 1e8, 0.83, 0.94, 6.74, 1.68),
    Table1Row("Llama-3-8B-Instruct-262K", 2.8e8, 0.76, 0.91, 8.75, 2.50),
)
