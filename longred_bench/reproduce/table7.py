"""``reproduce table7``: LongReD Table 7, LongReD-C against continual-learning baselines at one
extension (the paper's is 32K ABF): ``cpt`` and ``longred-c`` (Table 3's runs), ``attention-only``
(CPT with only the attention projections trainable, the paper's PET) and ``merge`` (half the
``cpt`` run's weights, half the original's, no optimizer; built once its ``cpt`` run is
finished). A ``merge`` of seed ``s`` merges the ``cpt`` run of seed ``s``."""

from __future__ import annotations

from longred_bench.reproduce.grid import grid_spec

ROWS = ("cpt", "attention-only", "merge", "longred-c")
SPEC = grid_spec(
    "table7", "LongReD Table 7: LongReD-C against continual-learning baselines", ROWS, ROWS,
    "longred_bench.reports.table7_report:build_table7",
)  # fmt: skip
