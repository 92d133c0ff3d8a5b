"""``reproduce table2``: LongReD Table 2, long-only against long+short CPT data.

Rows: ``cpt`` (long data only; Table 3's runs, from its cache), ``long-short-cpt`` (half of the
long tokens replaced by text of the original window, CE on both at the extended RoPE: the paper's
"Long+Short") and ``mix-cpt`` (LongReD's 4 : 3 : 1 mix, Table 3's runs) for reference. Every row
trains the same steps and tokens per step and reads the same long data (D1) for its long share;
the original-window text is the short data of LongReD's mix (``s2l_data``).
"""

from __future__ import annotations

from longred_bench.reproduce.grid import grid_spec

ROWS = ("cpt", "long-short-cpt", "mix-cpt")
SPEC = grid_spec(
    "table2", "LongReD Table 2: long-only against long+short CPT data", ROWS, ROWS,
    "longred_bench.reports.table2_report:build_table2",
)  # fmt: skip
