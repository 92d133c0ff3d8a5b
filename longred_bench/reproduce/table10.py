"""``reproduce table10``: LongReD Table 10, training cost per recipe from the runs' own timings.

A profile (:data:`TABLE10_PROFILES`) is a Table 3 profile restricted to the rows whose cost the
paper compares: long-only CPT, mixed-data CPT and LongReD (both samplers where Table 3 has them).
At ``tiny`` they are Table 3's runs, so the call only reads the run cache (each run trained and
evaluated first where it is missing).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from longred_bench.reproduce.table3 import TABLE3_PROFILES, Table3Profile, reproduce_runs

_ROWS = ("cpt", "mix-cpt", "longred-c", "longred-u")
TABLE10_PROFILES: dict[str, Table3Profile] = {
    "smoke": replace(TABLE3_PROFILES["smoke"], rows=("cpt", "mix-cpt", "longred-c")),
    "tiny": replace(
        TABLE3_PROFILES["tiny"],
        rows=_ROWS,
        seeds=dict.fromkeys(_ROWS, 3),
        table1_extensions=(),
    ),
}


def reproduce_table10(
    profile: str, out: Path, *, force: bool, progress: bool, jobs: int = 1
) -> list[Path]:
    """Reuse (or train and evaluate) the rows of ``profile`` and write the cost report."""
    from longred_bench.reports.table10_report import build_table10

    del force  # every unit is cached by its config; there is nothing else to redo
    return reproduce_runs(
        "table10", TABLE10_PROFILES[profile], build_table10, profile, out, progress=progress,
        jobs=jobs,
    )  # fmt: skip
