"""``reproduce table4`` / ``table5`` / ``table6``: LongReD's ablations of LongReD-C (loss
weights, distilled layers, short-distillation length) at one extension.

Each profile is a Table 3 profile at one extension (the paper's ablations are at 32K ABF; ``tiny``
uses Table 3's ABF 2e6) with ``longred-c`` (the default, Table 3's runs) and the table's variants
(:data:`~longred_bench.reproduce.table3.ABLATION_ROWS`), 3 seeds each at ``tiny``. At ``tiny`` the
default's short texts are 128 tokens (half the 256-token window), so Table 6 adds the paper's
three lengths as fractions of the window (1/8, 1/4, 1x) beside it.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from pathlib import Path

from longred_bench.reproduce.table3 import TABLE3_PROFILES, Table3Profile, reproduce_runs

_TABLE_ROWS = {
    "table4": ("longred-c-no-short", "longred-c-no-s2l", "longred-c-a2-100", "longred-c-a1-100",
               "longred-c-a1-2"),
    "table5": ("longred-c-uniform", "longred-c-all-layers", "longred-c-last-layer"),
    "table6": ("longred-c-short-eighth", "longred-c-short-quarter", "longred-c-short-full"),
}  # fmt: skip


def _profiles(rows: tuple[str, ...]) -> dict[str, Table3Profile]:
    every = ("longred-c", *rows)
    return {
        "smoke": replace(TABLE3_PROFILES["smoke"], rows=every),
        "tiny": replace(
            TABLE3_PROFILES["tiny"],
            extensions=("abf:theta=2e6",),
            rows=every,
            seeds=dict.fromkeys(every, 3),
            table1_extensions=(),
        ),
    }


ABLATION_PROFILES: dict[str, dict[str, Table3Profile]] = {
    name: _profiles(rows) for name, rows in _TABLE_ROWS.items()
}


def reproduce_ablation(
    name: str, profile: str, out: Path, *, force: bool, progress: bool, jobs: int = 1
) -> list[Path]:
    """Train and evaluate the rows of ablation ``name`` at ``profile`` (or reuse them) and write
    its report."""
    from longred_bench.reports.ablation_report import build_ablation
    from longred_bench.reports.ablation_tables import ABLATIONS

    del force  # every unit is cached by its config; there is nothing else to redo
    build = partial(build_ablation, ABLATIONS[name])
    prof = ABLATION_PROFILES[name][profile]
    return reproduce_runs(name, prof, build, profile, out, progress=progress, jobs=jobs)
