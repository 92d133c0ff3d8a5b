"""``reproduce table7``: LongReD Table 7, LongReD-C against continual-learning baselines.

A profile (:data:`TABLE7_PROFILES`) is a Table 3 profile at one extension (the paper's Table 7 is
at 32K ABF; ``tiny`` uses Table 3's ABF 2e6) with the rows ``cpt`` and ``longred-c`` (Table 3's
runs, cached), ``attention-only`` (CPT with only the attention projections trainable, the
paper's PET) and ``merge`` (half the ``cpt`` run's weights, half the original's, no optimizer;
built after the pool's units, once its ``cpt`` run is finished). Every row has 3 seeds at
``tiny``; a ``merge`` of seed ``s`` merges the ``cpt`` run of seed ``s``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from longred_bench.reproduce.table3 import TABLE3_PROFILES, Table3Profile, reproduce_runs

_ROWS = ("cpt", "attention-only", "merge", "longred-c")
TABLE7_PROFILES: dict[str, Table3Profile] = {
    "smoke": replace(TABLE3_PROFILES["smoke"], rows=_ROWS),
    "tiny": replace(
        TABLE3_PROFILES["tiny"],
        extensions=("abf:theta=2e6",),
        rows=_ROWS,
        seeds=dict.fromkeys(_ROWS, 3),
        table1_extensions=(),
    ),
}


def reproduce_table7(
    profile: str, out: Path, *, force: bool, progress: bool, jobs: int = 1
) -> list[Path]:
    """Train and evaluate the rows of ``profile`` (or reuse them) and write the report."""
    from longred_bench.reports.table7_report import build_table7

    del force  # every unit is cached by its config; there is nothing else to redo
    return reproduce_runs(
        "table7", TABLE7_PROFILES[profile], build_table7, profile, out, progress=progress, jobs=jobs
    )
