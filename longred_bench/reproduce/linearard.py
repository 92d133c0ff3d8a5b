"""``reproduce linearard``: LinearARD beside CPT and LongReD-C at Table 3's extensions and budget.

A profile (:data:`LINEARARD_PROFILES`) is a Table 3 profile with other rows: the baselines
``cpt`` and ``longred-c`` (the same runs as Table 3's, so they come from its cache) and the
four LinearARD rows
(:data:`~longred_bench.reports.linearard_report.LINEARARD_ROWS`): with its LoRA and with every
weight trained, each at the baselines' token budget and at 1/64 of it
(:data:`~longred_bench.reproduce.table3.LITE_STEPS`). The rows a verdict compares (the baselines
and LinearARD with its LoRA at both budgets) are trained with 3 seeds at ``tiny``; the
all-weights rows with one.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from longred_bench.reproduce.table3 import TABLE3_PROFILES, Table3Profile, reproduce_runs

_ROWS = ("cpt", "longred-c", "linearard", "linearard-ft", "linearard-lite", "linearard-lite-ft")
LINEARARD_PROFILES: dict[str, Table3Profile] = {
    # 4 steps of 4,096 tokens, so the reduced budget (1 step of 256 tokens) still holds one row
    # of tiny-random's 256-token window and is 1/64 of the others'.
    "smoke": replace(
        TABLE3_PROFILES["smoke"],
        rows=_ROWS,
        overrides={**TABLE3_PROFILES["smoke"].overrides, "steps": 4, "tokens_per_step": 4096},
    ),
    "tiny": replace(
        TABLE3_PROFILES["tiny"],
        rows=_ROWS,
        seeds=dict.fromkeys(("cpt", "longred-c", "linearard", "linearard-lite"), 3),
        table1_extensions=(),
    ),
}


def reproduce_linearard(
    profile: str, out: Path, *, force: bool, progress: bool, jobs: int = 1
) -> list[Path]:
    """Train and evaluate the rows of ``profile`` (or reuse them) and write the report."""
    from longred_bench.reports.linearard_report import build_linearard

    del force  # every unit is cached by its config; there is nothing else to redo
    return reproduce_runs(
        "linearard",
        LINEARARD_PROFILES[profile],
        build_linearard,
        profile,
        out,
        progress=progress,
        jobs=jobs,
    )
