"""``reproduce linearard``: LinearARD beside CPT and LongReD-C at the profile's extensions and
budget: the baselines ``cpt`` and ``longred-c`` (Table 3's runs) and the four LinearARD rows
(:data:`~longred_bench.reports.linearard_report.LINEARARD_ROWS`): with its LoRA and with every
weight trained, each at the baselines' token budget and at 1/64 of it
(:data:`~longred_bench.reproduce.rows.LITE_STEPS`). The rows a verdict compares (the baselines
and LinearARD with its LoRA at both budgets) get the profile's seeds; the all-weights rows one."""

from __future__ import annotations

from longred_bench.reproduce.grid import grid_spec

ROWS = ("cpt", "longred-c", "linearard", "linearard-ft", "linearard-lite", "linearard-lite-ft")
COMPARED = ("cpt", "longred-c", "linearard", "linearard-lite")
SPEC = grid_spec(
    "linearard", "LinearARD beside CPT and LongReD-C, at two budgets", ROWS, COMPARED,
    "longred_bench.reports.linearard_report:build_linearard",
)  # fmt: skip
