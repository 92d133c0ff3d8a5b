"""``reproduce table2``: LongReD Table 2, long-only against long+short CPT data.

A profile (:data:`TABLE2_PROFILES`) is a Table 3 profile with other rows: ``cpt`` (long data only;
at ``tiny`` the same runs as Table 3's, so they come from its cache), ``long-short-cpt`` (half of
the long tokens replaced by text of the original window, CE on both at the extended RoPE: the
paper's "Long+Short") and, at ``tiny``, ``mix-cpt`` (LongReD's 4 : 3 : 1 mix, Table 3's runs) for
reference. Every row trains the same steps and tokens per step and reads the same long data (D1)
for its long share; the original-window text is the short data of LongReD's mix (``s2l_data``:
Brown ``train`` at ``tiny``, where D1 is Austen + KJV). The rows of the verdict are trained with 3
seeds at ``tiny``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from longred_bench.reproduce.table3 import TABLE3_PROFILES, Table3Profile, reproduce_runs

_COMPARED = ("cpt", "long-short-cpt")
TABLE2_PROFILES: dict[str, Table3Profile] = {
    "smoke": replace(TABLE3_PROFILES["smoke"], rows=_COMPARED),
    "tiny": replace(
        TABLE3_PROFILES["tiny"],
        rows=(*_COMPARED, "mix-cpt"),
        seeds=dict.fromkeys((*_COMPARED, "mix-cpt"), 3),
        table1_extensions=(),
    ),
}


def reproduce_table2(
    profile: str, out: Path, *, force: bool, progress: bool, jobs: int = 1
) -> list[Path]:
    """Train and evaluate the rows of ``profile`` (or reuse them) and write the report."""
    from longred_bench.reports.table2_report import build_table2

    del force  # every unit is cached by its config; there is nothing else to redo
    return reproduce_runs(
        "table2", TABLE2_PROFILES[profile], build_table2, profile, out, progress=progress, jobs=jobs
    )
