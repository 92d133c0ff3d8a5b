"""``reproduce table10``: LongReD Table 10, training cost per recipe from the runs' own timings:
long-only CPT, mixed-data CPT and LongReD with both samplers (Table 3's runs, so the call only
reads the run cache where Table 3 ran; each run trained and evaluated first where missing)."""

from __future__ import annotations

from longred_bench.reproduce.grid import grid_spec

ROWS = ("cpt", "mix-cpt", "longred-c", "longred-u")
SPEC = grid_spec(
    "table10", "LongReD Table 10: training cost per recipe", ROWS, ROWS,
    "longred_bench.reports.table10_report:build_table10",
)  # fmt: skip
