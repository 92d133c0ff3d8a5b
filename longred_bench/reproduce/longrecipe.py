"""``reproduce longrecipe``: LongRecipe against PoSE, RPES and full-length CPT at one extension.

A profile (:data:`LONGRECIPE_PROFILES`) is a Table 3 profile with other rows, at one extension
where full-length training is affordable here: ``cpt`` (full-length training; at ``tiny`` the same
runs as Table 3's, so they come from its cache), ``rpes`` and ``pose`` (samples of the original
window, position ids spread over the target window), ``longrecipe`` (samples of about 30% of the
target window from sentence-selected text with its anchor types measured for the run's own model,
sentence-gap position ids, replay and the 50/50 merge) and ``longrecipe-digit`` (the released
code's selection: sentences holding a digit). Every row trains the same steps on the same tokens
(LongRecipe's replay is the last quarter of its steps:
:func:`~longred_bench.reproduce.table3.replay_within_budget`) on the same long data. The rows a
verdict compares are trained with 3 seeds at ``tiny``; the digit selection (in no verdict) with one.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from longred_bench.reproduce.table3 import TABLE3_PROFILES, Table3Profile, reproduce_runs

_COMPARED = ("cpt", "rpes", "pose", "longrecipe")
LONGRECIPE_PROFILES: dict[str, Table3Profile] = {
    # LongRecipe's digit selection needs corpus text, which the smoke profile's random data is not.
    "smoke": replace(
        TABLE3_PROFILES["smoke"],
        rows=_COMPARED,
        extensions=("pi:factor=4",),
        overrides={**TABLE3_PROFILES["smoke"].overrides, "steps": 4},
        ppl_corpus="random",
        ppl_windows=2,
    ),
    # ABF 2e6 (window 1,024): Table 3's ABF setting, where full-length CPT learns long retrieval
    # (claim (e) of Table 3); PoSE and RPES train on 256-token samples (25% of the window),
    # LongRecipe on 320 (31%).
    "tiny": replace(
        TABLE3_PROFILES["tiny"],
        rows=(*_COMPARED, "longrecipe-digit"),
        extensions=("abf:theta=2e6",),
        seeds=dict.fromkeys(_COMPARED, 3),
        table1_extensions=(),
        ppl_corpus="austen:test",  # Pride and Prejudice: no recipe trains on the test split
    ),
}


def reproduce_longrecipe(
    profile: str, out: Path, *, force: bool, progress: bool, jobs: int = 1
) -> list[Path]:
    """Train and evaluate the rows of ``profile`` (or reuse them) and write the report."""
    from longred_bench.reports.longrecipe_report import build_longrecipe

    del force  # every unit is cached by its config; there is nothing else to redo
    return reproduce_runs(
        "longrecipe",
        LONGRECIPE_PROFILES[profile],
        build_longrecipe,
        profile,
        out,
        progress=progress,
        jobs=jobs,
    )
