"""``reproduce all`` and ``reproduce ... --dry-run``: what a profile's tables run, which of their
units the run cache already holds, and how long the rest would take.

The tables made of Table 3 style runs (:data:`RUN_TABLES`) are planned unit by unit: each training
run and each evaluation, keyed as the real call keys them (a run directory, an evaluation's config
hash), so a unit two tables share counts once in the total. A cached training run's time is its
own (``run.json``); an uncached one is estimated from the cached runs' seconds per token, of the
same recipe where there are some, else of every recipe, times its tokens. A cached evaluation's
time is its own where the call that computed it recorded one (``timing.json``); an uncached one
is the median of the recorded times of its suite, else
:data:`~longred_bench.reproduce.table3.UNIT_COST` (measured at ``tiny``: a third of a CPT run;
of any cached training run where the plan has no CPT run); a merge is one second. Other
tables (Table 1, ``tiny_base``, PCD, the kernel table) are one line each, cached or not where the
cache says so. ``--profile paper --dry-run`` prints the papers'
configurations instead (:func:`paper_plan`), offline; a real ``paper`` run needs a GPU and hub
access and fails at once without a GPU.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from typing import Any

from longred_bench.errors import UserError

# Tables made of Table 3 style runs, in the order ``reproduce all`` runs them (Table 3 first: the
# others reuse its runs).
RUN_TABLES = (
    "table3", "table2", "table4", "table5", "table6", "table7", "table10", "linearard",
    "longrecipe",
)  # fmt: skip
# The other tables, after them.
OTHER_TABLES = ("fig2", "fig3", "table1", "tiny_base", "pcd", "kernel")
MERGE_SECONDS = 1.0  # a merge interpolates two small models: about a second at tiny
# What the other papers state of their compute (LongReD's own GPU hours are its Table 10).
OTHER_PAPERS_COMPUTE = {
    "linearard": "4.25M training tokens against 256M for LongReD / CPT (LLaMA2-7B, 4K -> 32K)",
    "longrecipe": "16 H100-hours at 80K (Llama-3-8B-Instruct; 104 steps of 96 sequences)",
}


@dataclass(frozen=True)
class PlannedUnit:
    """One unit of a table: ``key`` identifies it across tables (a run directory's name or an
    evaluation's config hash)."""

    key: str
    label: str
    kind: str  # "train" or "eval"
    cached: bool
    seconds: float | None  # measured (cached training runs) or estimated; None: unknown
    recipe: str = ""
    tokens: int = 0
    suite: str = ""  # an evaluation's suite (``short_tiny``, ``ruler``, ``ppl``)


def run_table_profile(table: str, profile: str) -> Any:
    """The :class:`~longred_bench.reproduce.table3.Table3Profile` of a run table at ``profile``
    (a UserError when the table has no such profile)."""
    from longred_bench.reproduce.ablations import ABLATION_PROFILES
    from longred_bench.reproduce.linearard import LINEARARD_PROFILES
    from longred_bench.reproduce.longrecipe import LONGRECIPE_PROFILES
    from longred_bench.reproduce.table2 import TABLE2_PROFILES
    from longred_bench.reproduce.table3 import TABLE3_PROFILES
    from longred_bench.reproduce.table7 import TABLE7_PROFILES
    from longred_bench.reproduce.table10 import TABLE10_PROFILES

    profiles = {"table3": TABLE3_PROFILES, "table2": TABLE2_PROFILES, **ABLATION_PROFILES,
                "table7": TABLE7_PROFILES, "table10": TABLE10_PROFILES,
                "linearard": LINEARARD_PROFILES, "longrecipe": LONGRECIPE_PROFILES}  # fmt: skip
    if profile not in profiles[table]:
        raise UserError(f"{table} has no profile {profile!r}; it runs at: "
                        f"{', '.join(profiles[table])}")  # fmt: skip
    return profiles[table][profile]


def _eval_unit(unit: dict[str, Any], label: str) -> PlannedUnit:
    from longred_bench.cache import cache_dir
    from longred_bench.jobs.units import unit_seconds
    from longred_bench.results import config_hash

    key = config_hash(unit)
    path = cache_dir() / "runs" / "table3-eval" / key / "eval.jsonl"
    cached = path.is_file()
    seconds = unit_seconds(path.parent) if cached else None
    return PlannedUnit(key, label, "eval", cached, seconds, suite=str(unit.get("suite", "")))


def table_units(prof: Any) -> list[PlannedUnit]:
    """Every unit of a run table's profile, cached or not (seconds: measured where cached)."""
    from longred_bench.reproduce.table3 import (
        _eval_units,
        _finished_run,
        base_eval_units,
        run_dir_of,
        trained_rows,
    )

    units = []
    for unit, labels in base_eval_units(prof):
        label = f"eval {labels['row']} {labels['extension'] or ''} {unit['suite']}"
        units.append(_eval_unit(unit, " ".join(label.split())))
    for run in trained_rows(prof):
        cfg = run.config(prof)
        run_dir = run_dir_of(cfg)
        info = _finished_run(run_dir)
        where = run.extension or "original RoPE"
        units.append(PlannedUnit(
            run_dir.name, f"train {run.row} {where} seed {run.seed}", "train", info is not None,
            None if info is None else float(info["seconds"]), cfg.recipe,
            cfg.steps * cfg.tokens_per_step,
        ))  # fmt: skip
        if run.extension in prof.table1_extensions:
            continue  # trained for Table 1's drift only
        for ext in [run.extension] if run.extension else prof.extensions:
            for unit in _eval_units(prof, str(run_dir / "final"), None, ext):
                units.append(_eval_unit(unit, f"eval {run.row} {ext} seed {run.seed} "
                                              f"{unit['suite']}"))  # fmt: skip
    return units


def estimate(units: list[PlannedUnit]) -> list[PlannedUnit]:
    """``units`` with an estimated ``seconds`` where none was measured (see the module)."""
    from longred_bench.reproduce.table3 import UNIT_COST

    rates: dict[str, list[float]] = {}
    for u in units:
        if u.kind == "train" and u.cached and u.seconds and u.tokens:
            rates.setdefault(u.recipe, []).append(u.seconds / u.tokens)
    every = [r for values in rates.values() for r in values]
    trained = [u for u in units if u.kind == "train" and u.recipe != "merge" and u.seconds]
    runs = [u.seconds for u in trained if u.recipe == "cpt"] or [u.seconds for u in trained]
    eval_seconds = UNIT_COST["eval"] * statistics.median(runs) if runs else None
    by_suite: dict[str, list[float]] = {}
    for u in units:
        if u.kind == "eval" and u.cached and u.seconds:
            by_suite.setdefault(u.suite, []).append(u.seconds)
    out = []
    for u in units:
        seconds = u.seconds
        if seconds is None and u.kind == "eval":
            measured = by_suite.get(u.suite)
            seconds = statistics.median(measured) if measured else eval_seconds
        elif seconds is None and u.recipe == "merge":
            seconds = MERGE_SECONDS
        elif seconds is None and (rates.get(u.recipe) or every):
            seconds = statistics.median(rates.get(u.recipe) or every) * u.tokens
        out.append(replace(u, seconds=seconds))
    return out


def _minutes(seconds: float | None) -> str:
    return "unknown" if seconds is None else f"{seconds / 60:.1f} min"


def plan_text(tables: list[str], profile: str, jobs: int) -> str:
    """The dry-run listing of ``tables`` at ``profile``: each unit, cached or not, per table;
    then the distinct units to run in all and the estimated time with ``jobs`` workers."""
    planned = {t: table_units(run_table_profile(t, profile)) for t in tables if t in RUN_TABLES}
    every = estimate([u for units in planned.values() for u in units])
    seconds = {u.key: u.seconds for u in every}
    lines = [f"reproduce --profile {profile} --dry-run ({jobs} job(s)); nothing is run", ""]
    for table in tables:
        if table not in planned:
            lines += [f"{table}: {other_status(table, profile)}", ""]
            continue
        units = planned[table]
        todo = [u for u in units if not u.cached]
        left = sum(seconds[u.key] or 0.0 for u in todo)
        lines.append(f"{table}: {len(units)} units, {len(units) - len(todo)} cached, "
                     f"{len(todo)} to run (about {_minutes(left)} of compute)")  # fmt: skip
        for u in units:
            state = "cached" if u.cached else "to run"
            lines.append(f"  {state:>7}  {u.label}  ({_minutes(seconds[u.key])})")
        lines.append("")
    distinct = {u.key: u for u in every}
    todo = [u for u in distinct.values() if not u.cached]
    unknown = sum(u.seconds is None for u in todo)
    total = sum(u.seconds or 0.0 for u in todo) / max(1, jobs)
    lines.append(
        f"In all: {len(distinct)} distinct units of the run tables, {len(distinct) - len(todo)} "
        f"cached, {len(todo)} to run: about {_minutes(total)} with {jobs} job(s)"
        + (f" ({unknown} without an estimate)" if unknown else "")
        + ". Estimates: cached runs' seconds per token; an evaluation the median recorded time "
        "of its suite, else a third of a CPT run."
    )
    return "\n".join(lines) + "\n"


def other_status(table: str, profile: str) -> str:
    """One line for a table that is not made of Table 3 style runs."""
    from longred_bench.cache import cache_dir

    if table == "kernel":
        return "reads the committed benchmark CSVs (seconds)"
    if table == "tiny_base":
        from longred_bench.jobs.tiny_base import tiny_base_run_dir

        built = (tiny_base_run_dir() / "final" / "config.json").is_file()
        return f"tiny-base {'built' if built else 'not built (about 15 min)'}; its evaluations " \
               "are cached units of their own (not itemised)"  # fmt: skip
    if table == "fig3":
        from longred_bench.reproduce.fig3 import FIG3_PROFILES, cached_runs

        done, runs = cached_runs(FIG3_PROFILES[profile])
        fp = FIG3_PROFILES[profile]
        return (f"{done} of {runs} CPT runs of {fp.multiple}x Table 3's steps cached (each about "
                f"{fp.multiple}x a Table 3 CPT run), then {len(fp.snapshots)} short evaluations "
                "each")  # fmt: skip
    if table == "fig2":
        from longred_bench.reproduce.fig2 import FIG2_PROFILES

        fp = FIG2_PROFILES[profile]
        return (f"{len(fp.zero_shot)} zero-shot and {len(fp.trained)} CPT-trained extensions "
                "(Table 3's seed-0 CPT runs where they exist), each a short evaluation and a "
                "drift measurement; cached units are reused (not itemised)")  # fmt: skip
    if table == "table1":
        runs = sorted((cache_dir() / "runs").glob(f"table1-{profile}-*"))
        return ("drift of the zero-shot extensions " + ("cached" if runs else "not cached")
                + "; after CPT, the CPT runs of Table 3")  # fmt: skip
    return "units of its own (not itemised here; resumable unit by unit)"


def paper_plan() -> str:
    """The papers' configurations (``reproduce all --profile paper --dry-run``), read from the
    recipes' ``paper`` profiles, with LongReD Table 10's GPU hours; offline."""
    from longred_bench.reports.table10_report import TABLE10
    from longred_bench.training.config import resolve_config

    lines = [
        "reproduce --profile paper --dry-run: LongReD's configurations (Llama-3-8B, 32K; the "
        "recipes' `paper` profiles); nothing is run. A real run needs GPUs and hub access.",
        "",
        "| recipe | model | RoPE | long / short length | steps x tokens per step = tokens | "
        "lr | loss weights | data mix |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for recipe, extra in (("cpt", {}), ("mix-cpt", {}), ("longred", {"sampler": "cream"}),
                          ("longred", {"sampler": "uniform"}), ("attention-only", {})):  # fmt: skip
        cfg = resolve_config(recipe, profile="paper", overrides=extra)
        name = recipe + (f" ({extra['sampler']})" if extra else "")
        weights = f"a1 {cfg.a1:g}, a2 {cfg.a2:g}, top_m {cfg.top_m}" if recipe == "longred" else ""
        mix = ", ".join(f"{k} {v:.3g}" for k, v in cfg.mix.items())
        lines.append(
            f"| {name} | {cfg.model} | {cfg.rope} | {cfg.long_len} / {cfg.short_len} | "
            f"{cfg.steps} x {cfg.tokens_per_step:,} = {cfg.steps * cfg.tokens_per_step:,} | "
            f"{cfg.lr:g} | {weights} | {mix} |"
        )
    lines += [
        "",
        "The other papers' recipes (their `paper` profiles; `longred-bench train --recipe R "
        "--profile paper --dry-run` prints each whole config):",
        "",
        "| recipe | model | RoPE | long / short length | steps x tokens per step = tokens | lr | "
        "the paper's compute |",
        "|---|---|---|---|---|---|---|",
    ]
    for recipe in ("linearard", "pose", "rpes", "longrecipe"):
        cfg = resolve_config(recipe, profile="paper")
        lines.append(
            f"| {recipe} | {cfg.model} | {cfg.rope} | {cfg.long_len} / {cfg.short_len} | "
            f"{cfg.steps} x {cfg.tokens_per_step:,} = {cfg.steps * cfg.tokens_per_step:,} | "
            f"{cfg.lr:g} | {OTHER_PAPERS_COMPUTE.get(recipe, 'not stated')} |"
        )
    lines += [
        "",
        "LongReD Table 10, GPU hours on 8 x A800 (Llama-3-8B):",
    ]
    for window, hours in TABLE10.items():
        lines.append(f"- {window}: " + ", ".join(f"{k} {v} h" for k, v in hours.items()))
    return "\n".join(lines) + "\n"


def check_can_run(profile: str) -> None:
    """A real ``paper`` run needs a GPU: fail at once, in one line, without one."""
    if profile != "paper":
        return
    import torch

    if not torch.cuda.is_available():
        raise UserError(
            "the paper profile trains 8B models and needs GPUs and hub access; none is visible "
            "here: `reproduce all --profile paper --dry-run` prints its plan"
        )
