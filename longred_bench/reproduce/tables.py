"""``reproduce TABLE --profile P``: the declared runs of a paper table at a scale profile, cached
by config hash under ``$LONGRED_CACHE/runs``, then the table's report builder.

Profiles (see the README): ``smoke`` (tiny random Llama, seconds, structure only), ``smol``
(SmolLM2-135M, real weights, CPU minutes; the default) and ``paper`` (the paper's models on a GPU
with hub access); ``tiny`` uses the suite's own pretrained ``tiny-base`` and, for Table 1,
measures drift after CPT too, and the drift of the ``control`` checkpoint (the same CPT data at
the original RoPE), on the same texts (the training runs are shared with Table 3).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from longred_bench.errors import UserError
from longred_bench.profiles import PROFILES, check_profile
from longred_bench.reproduce import DEFAULT_PROFILE
from longred_bench.reproduce.ablations import ABLATION_PROFILES, reproduce_ablation
from longred_bench.reproduce.fig2 import FIG2_PROFILES, reproduce_fig2
from longred_bench.reproduce.fig3 import FIG3_PROFILES, reproduce_fig3
from longred_bench.reproduce.linearard import reproduce_linearard
from longred_bench.reproduce.longrecipe import reproduce_longrecipe
from longred_bench.reproduce.table1 import TABLE1_PROFILES, reproduce_table1
from longred_bench.reproduce.table2 import TABLE2_PROFILES, reproduce_table2
from longred_bench.reproduce.table3 import TABLE3_PROFILES
from longred_bench.reproduce.table7 import TABLE7_PROFILES, reproduce_table7
from longred_bench.reproduce.table10 import TABLE10_PROFILES, reproduce_table10
from longred_bench.results import (
    write_table_records,
)


def _kernel(profile: str, out: Path, *, force: bool, progress: bool) -> list[Path]:
    """The relation-KL kernel table from the committed benchmark CSVs (profile-independent)."""
    from longred_bench.reports.kernel import build_kernel_report

    bench = Path("reports") / "kernels"
    cpu_csv = bench / "relation_kl_cpu.csv"
    if not cpu_csv.is_file():
        raise UserError(f"{cpu_csv} is missing: run `nox -s bench_kernels` first")
    return build_kernel_report(
        cpu_csv, bench / "relation_kl_gpu.csv", out, compile_csv=bench / "compile_sm90.csv"
    )


def _table3(
    profile: str, out: Path, *, force: bool, progress: bool, jobs: int = 1, d1: str = "retrieval"
) -> list[Path]:
    """LongReD Table 3 at a profile where the suite can train (smoke, tiny), its trained rows on
    the long data of variant ``d1``."""
    from longred_bench.reports.table3 import build_table3
    from longred_bench.reproduce.pool import wall_note
    from longred_bench.reproduce.table3 import run_table3

    load_start = os.getloadavg()[0]
    records, seconds = run_table3(profile, progress=progress, jobs=jobs, d1=d1)
    out.mkdir(parents=True, exist_ok=True)
    jsonl = write_table_records(out, "table3", records)
    command = (
        f"longred-bench reproduce table3 --profile {profile}"
        + (f" --jobs {jobs}" if jobs != 1 else "")
        + (f" --d1 {d1}" if d1 != "retrieval" else "")
    )
    note = wall_note(jobs, load_start)
    paths = build_table3(
        records, out, profile=profile, command=command, wall_seconds=seconds, wall_note=note
    )
    return [*paths, jsonl]


TINY_BASE_EVAL = {"batch_size": 16, "device": "cpu", "seed": 0, "item_scores": True}
# RULER tasks whose prompts fit 256 tokens of tiny-base's tokenizer (niah_multikey_3,
# niah_multiquery, qa_1 and qa_2 need 266-296 tokens with an empty haystack).
TINY_BASE_RULER_TASKS = (
    "niah_single_1", "niah_single_2", "niah_single_3", "niah_multikey_1", "niah_multikey_2",
    "niah_multivalue", "vt", "cwe", "fwe",
)  # fmt: skip
# Those with phrasing families: the targets compare their held-out and standard scores.
TINY_BASE_PHRASED = tuple(t for t in TINY_BASE_RULER_TASKS if t not in ("cwe", "fwe"))


def _ruler(tasks: tuple[str, ...], lengths: list[int], samples: int) -> dict:
    return {"lengths": lengths, "samples": samples, "tasks": [f"longred_ruler_{t}" for t in tasks]}


# name -> (suite, settings): the evaluations of the report, each a cached unit.
TINY_BASE_UNITS: dict[str, tuple[str, dict]] = {
    "short_tiny": ("short_tiny", {}),
    "passkey_standard": ("short_tiny", {"tasks": ["longred_tiny_passkey"], "phrasing": "standard"}),
    "ruler_standard": ("ruler", _ruler(TINY_BASE_RULER_TASKS, [256, 512, 1024], 20)),
    "ruler_heldout": ("ruler", {**_ruler(TINY_BASE_RULER_TASKS, [256, 512, 1024], 20),
                                "phrasing": "heldout"}),
    "targets_standard": ("ruler", _ruler(TINY_BASE_PHRASED, [256], 100)),
    "targets_heldout": ("ruler", {**_ruler(TINY_BASE_PHRASED, [256], 100), "phrasing": "heldout"}),
    "lmeval_niah": ("ruler", {"tasks": ["longred_lmeval_niah_single_1"], "lengths": [256],
                              "samples": 100}),
}  # fmt: skip


def _tiny_base(profile: str, out: Path, *, force: bool, progress: bool) -> list[Path]:
    """tiny-base's pretraining curve, convergence check, retrieval targets and scores (profile
    tiny only)."""
    from longred_bench.jobs.tiny_base import build_identity, tiny_base_dir, tiny_base_longer_dir
    from longred_bench.reports.curves import read_metrics
    from longred_bench.reports.tiny_base_report import build_tiny_base_report
    from longred_bench.reproduce.table3 import evaluate_cached
    from longred_bench.taskdata.tiny_tasks import build, chance_accuracy

    final = tiny_base_dir(progress=progress)
    run = final.parent
    longer = read_metrics(tiny_base_longer_dir(progress=progress) / "metrics.jsonl")
    evals = {}
    for name, (suite, extra) in TINY_BASE_UNITS.items():
        unit = {"model": "tiny-base", "base": build_identity("tiny-base"), "rope": None,
                "suite": suite, **TINY_BASE_EVAL, **extra}  # fmt: skip
        evals[name] = evaluate_cached(unit, {"row": "original"}, progress=progress)
    chance = {
        f"longred_tiny_{t}": chance_accuracy(t, build(t))
        for t in ("cloze", "nextsent", "swap", "replace", "passkey")
    }
    import json

    info = json.loads((run / "run.json").read_text())
    command = "longred-bench reproduce tiny_base --profile tiny"
    return build_tiny_base_report(
        read_metrics(run / "metrics.jsonl"), longer, info, evals, run / "curves.png", out,
        command=command, chance=chance, phrased=TINY_BASE_PHRASED, every=TINY_BASE_RULER_TASKS,
    )  # fmt: skip


def _pcd(profile: str, out: Path, *, force: bool, progress: bool) -> list[Path]:
    """Positional Contrastive Decoding: RULER, PSA and short tasks with and without PCD."""
    from longred_bench.reports.pcd_report import build_pcd_report
    from longred_bench.reports.psa_report import TOP_K
    from longred_bench.reproduce.pcd import PCD_PROFILES, run_pcd

    records, seconds = run_pcd(profile, progress=progress, force=force)
    out.mkdir(parents=True, exist_ok=True)
    jsonl = write_table_records(out, "pcd", records)
    command = f"longred-bench reproduce pcd --profile {profile}"
    paths = build_pcd_report(
        records, out, profile=profile, model=PCD_PROFILES[profile].model, command=command,
        seconds=seconds, top_k=TOP_K,
    )  # fmt: skip
    return [*paths, jsonl]


def table_profiles() -> dict[str, tuple[str, ...]]:
    """Each table and the profiles it has settings for (``kernel`` reads benchmark CSVs at
    any profile)."""
    from longred_bench.reproduce.linearard import LINEARARD_PROFILES
    from longred_bench.reproduce.longrecipe import LONGRECIPE_PROFILES
    from longred_bench.reproduce.pcd import PCD_PROFILES

    return {
        "table1": tuple(TABLE1_PROFILES),
        "table2": tuple(TABLE2_PROFILES),
        "table3": tuple(TABLE3_PROFILES),
        **{name: tuple(profiles) for name, profiles in ABLATION_PROFILES.items()},
        "table7": tuple(TABLE7_PROFILES),
        "table10": tuple(TABLE10_PROFILES),
        "fig2": tuple(FIG2_PROFILES),
        "fig3": tuple(FIG3_PROFILES),
        "linearard": tuple(LINEARARD_PROFILES),
        "longrecipe": tuple(LONGRECIPE_PROFILES),
        "tiny_base": ("tiny",),
        "pcd": tuple(PCD_PROFILES),
        "kernel": tuple(PROFILES),
    }


def profiles_table() -> str:
    """``longred-bench profiles``: every registered profile, its model, where it runs, its
    purpose, the tables it reproduces and the recipes ``train`` runs at it."""
    from longred_bench.training.config import RECIPES

    tables = table_profiles()
    rows = ["| profile | model | where | purpose | reproduce | train recipes |", "|---" * 6 + "|"]
    for name, prof in PROFILES.items():
        have = ", ".join(t for t, names in tables.items() if name in names) or "-"
        rows.append(
            f"| {name} | {prof.model} | {prof.where} | {prof.purpose} | {have} | "
            f"{', '.join(RECIPES)} |"
        )
    return "\n".join(rows)


TABLES: dict[str, Callable[..., list[Path]]] = {
    "table1": reproduce_table1,
    "table2": reproduce_table2,
    "table3": _table3,
    **{name: partial(reproduce_ablation, name) for name in ABLATION_PROFILES},
    "table7": reproduce_table7,
    "table10": reproduce_table10,
    "fig2": reproduce_fig2,
    "fig3": reproduce_fig3,
    "linearard": reproduce_linearard,
    "longrecipe": reproduce_longrecipe,
    "tiny_base": _tiny_base,
    "kernel": _kernel,
    "pcd": _pcd,
}


# The tables whose runs go to worker processes.
JOBS_TABLES = (
    "table2", "table3", "table4", "table5", "table6", "table7", "table10", "fig2", "fig3",
    "linearard",
    "longrecipe",
)  # fmt: skip


def reproduce(
    table: str,
    profile: str = DEFAULT_PROFILE,
    out: Path | None = None,
    *,
    force: bool = False,
    progress: bool = True,
    jobs: int = 1,
    d1: str | None = None,
    dry_run: bool = False,
) -> list[Path]:
    """Run (or reuse) the runs of ``table`` at ``profile`` and write its report; returns paths.
    ``jobs``: worker processes for the independent runs (:data:`JOBS_TABLES`). ``d1``: the long
    data of Table 3's trained rows (:data:`longred_bench.reproduce.table3.D1_VARIANTS`; table3 only;
    a variant other than ``retrieval`` writes under ``reports/<profile>/d1-<variant>`` by
    default)."""
    if table == "all":
        return reproduce_all(profile, out, force=force, progress=progress, jobs=jobs,
                             dry_run=dry_run)  # fmt: skip
    if table not in TABLES:
        raise UserError(f"unknown table {table!r}; available: {', '.join(TABLES)}")
    if dry_run:
        from longred_bench.reproduce.plan import RUN_TABLES, plan_text

        if table not in (*RUN_TABLES, "fig2", "fig3"):
            raise UserError(
                f"--dry-run plans the tables made of training runs ({', '.join(RUN_TABLES)}, "
                f"fig2, fig3) and `all`; run {table} without it"
            )
        check_profile(profile, table_profiles()[table], table)
        print(plan_text([table], profile, jobs), end="")
        return []
    check_profile(profile, table_profiles()[table], table)
    if jobs != 1 and table not in JOBS_TABLES:
        raise UserError(
            f"--jobs applies to {', '.join(JOBS_TABLES[:-1])} and {JOBS_TABLES[-1]} only; run "
            f"{table} without it"
        )
    if d1 is not None and table != "table3":
        raise UserError(f"--d1 applies to table3 only; run {table} without it")
    if d1 is not None:
        from longred_bench.reproduce.table3 import D1_VARIANTS

        if d1 not in D1_VARIANTS:
            raise UserError(f"unknown --d1 {d1!r}; variants: {', '.join(D1_VARIANTS)}")
    default = Path("reports") / profile
    if d1 not in (None, "retrieval"):
        default = default / f"d1-{d1}"
    out = out if out is not None else default
    extra: dict[str, Any] = {"jobs": jobs} if table in JOBS_TABLES else {}
    if table == "table3":
        extra["d1"] = d1 or "retrieval"
    return TABLES[table](profile, out, force=force, progress=progress, **extra)


def reproduce_all(
    profile: str,
    out: Path | None = None,
    *,
    force: bool = False,
    progress: bool = True,
    jobs: int = 1,
    dry_run: bool = False,
) -> list[Path]:
    """Every table with settings for ``profile``: the run tables first, Table 3 before the
    others (they reuse its runs through the run cache), then Table 1, ``tiny_base``, PCD and the
    kernel table. ``dry_run``: print the plan (:mod:`longred_bench.reproduce.plan`) instead."""
    from longred_bench.reproduce.plan import (
        OTHER_TABLES,
        RUN_TABLES,
        check_can_run,
        paper_plan,
        plan_text,
    )

    if profile == "paper" and dry_run:
        print(paper_plan(), end="")
        return []
    supported = table_profiles()
    tables = [t for t in (*RUN_TABLES, *OTHER_TABLES) if profile in supported[t]]
    if profile not in PROFILES:
        raise UserError(f"unknown profile {profile!r}; profiles: {', '.join(PROFILES)}")
    if dry_run:
        print(plan_text(tables, profile, jobs), end="")
        return []
    check_can_run(profile)
    paths: list[Path] = []
    for table in tables:
        if progress:
            print(f"[all] {table} --profile {profile}", flush=True)
        table_jobs = jobs if table in JOBS_TABLES else 1
        paths += reproduce(table, profile, out, force=force, progress=progress, jobs=table_jobs)
    return paths
