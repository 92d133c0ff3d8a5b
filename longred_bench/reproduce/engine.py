"""``reproduce TABLE --profile P``: the one engine behind every table.

It reads the profile (a one-line error for a bad file, before torch is imported), resolves the
table's settings (:meth:`TableSpec.resolve`), then computes every step the run cache does not
hold: in order, or in ``--jobs`` worker processes for the tables that allow it, a step starting
once the units it waits for are done. Steps whose configs depend on other units' results (a merge
on its source run's record, PCD's test units on its dev grid) are listed again after each round,
until nothing is left to compute. The records are then gathered from the cache (every step's
records with its labels, or the table's own ``records``) and written with the report
(:func:`~longred_bench.reproduce.output.write_outputs`, or the table's own ``write``).
``--dry-run`` prints the plan instead (:mod:`longred_bench.reproduce.plan`).
"""

from __future__ import annotations

import os
import time
from functools import partial
from pathlib import Path
from typing import Any

from longred_bench.errors import UserError
from longred_bench.jobs.run_steps import run_steps_record
from longred_bench.jobs.units import CachedUnit
from longred_bench.models.choice import choose_model
from longred_bench.profiles.schema import Profile
from longred_bench.reproduce.can_run import (
    check_can_run,
    check_startup,
    needed,
    paper_short_steps,
    pending_tasks,
)
from longred_bench.reproduce.model_check import (
    check_model,
    config_at_hand,
    extensions_of,
    local_model,
    read_cheaply,
)
from longred_bench.reproduce.output import check_report_profile
from longred_bench.reproduce.profile_views import checked_profile
from longred_bench.reproduce.registry import all_tables, get_spec
from longred_bench.reproduce.sources import (
    fetch_missing,
    fetch_note,
    missing_sources,
    needed_sources,
)
from longred_bench.reproduce.spec import Context, Step, option_args
from longred_bench.wording import counted

MAX_ROUNDS = 8


def gather(ctx: Context, steps: list[Step]) -> list[dict[str, Any]]:
    """The records of ``steps`` in order, each with its step's labels (and the summary record of
    the training run it names as ``train``); after the first step naming a run, that run's one
    per-step record (:func:`~longred_bench.jobs.run_steps.run_steps_record`) with the same labels.
    A unit missing from the cache is computed first."""
    results: dict[str, list[dict[str, Any]]] = {}
    records: list[dict[str, Any]] = []
    timed: set[str] = set()
    for step in steps:
        got = step.unit.run(progress=ctx.progress)
        results[step.key] = got
        if step.labels is None:
            continue
        labels = dict(step.labels)
        if step.train is not None:
            info = results.get(step.train) or CachedUnit("train", step.train, {}).cached()
            if info is None:
                raise UserError(f"{ctx.table}: the run {step.train} is not finished")
            labels["train"] = {**info[0], **step.train_extra}
        records += [{**r, **labels} for r in got]
        if step.train is not None and step.train not in timed:
            timed.add(step.train)
            records += _timings(info[0], labels)
    return records


def _timings(summary: dict[str, Any], labels: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-step record of the run ``summary`` describes, with ``labels`` and that summary
    as ``train`` (without a step's extras); none where the run has no folder or records."""
    found = run_steps_record(Path(str(summary["dir"]))) if summary.get("dir") else None
    return [{**found, **labels, "train": summary}] if found else []


def _ready(by_key: dict[str, Step], step: Step) -> bool:
    """Whether the units ``step`` waits for are in the cache (a merge re-keyed by its finished
    source, say, is not: the step waits for the next round)."""
    return all(k not in by_key or by_key[k].unit.cached() is not None for k in step.after)


def _compute(unit: CachedUnit, force: bool) -> None:
    """A worker's task: compute one unit quietly (module level: picklable)."""
    unit.run(progress=False, force=force and unit.kind != "train")


def run_steps(ctx: Context, jobs: int = 1) -> int:
    """Compute every step of table ``ctx`` that the cache does not hold (``ctx.force``: every
    evaluation and measurement again), in rounds (see the module docstring); how many units
    were computed."""
    spec = get_spec(ctx.table)
    computed: set[str] = set()
    listed = 0  # the units round 0 said it would compute
    for round_ in range(MAX_ROUNDS):
        by_key: dict[str, Step] = {}
        for step in spec.steps(ctx):  # two rows of one unit (e.g. a default row): computed once
            by_key.setdefault(step.key, step)
        pending = [s for s in by_key.values() if s.key not in computed and needed(s, ctx.force)]
        if round_ == 0:
            listed = len(pending)
            if ctx.progress:  # what a second call reuses, said before it reads
                print(f"[{ctx.table}] {counted(len(by_key), 'unit')}: "
                      f"{len(by_key) - len(pending)} cached (reused), {len(pending)} to compute",
                      flush=True)  # fmt: skip
        if not pending:
            if ctx.progress and len(computed) != listed:  # the first line's count was not all
                print(f"[{ctx.table}] computed {counted(len(computed), 'unit')}, not "
                      f"{listed}: the settings of some depended on units computed first, "
                      "which listed them again", flush=True)  # fmt: skip
            return len(computed)
        todo = [s for s in pending if not s.relisted or _ready(by_key, s)]
        fetch_missing(needed_sources(todo), progress=ctx.progress)
        ran = _run_round(ctx, todo, jobs if spec.parallel else 1, partial(_ready, by_key))
        if not ran:
            raise UserError(f"{ctx.table}: {pending[0].label} waits for units that were not made")
        computed |= set(ran)
    raise UserError(f"{ctx.table}: units still to compute after {MAX_ROUNDS} rounds")


def _run_round(ctx: Context, todo: list[Step], jobs: int, ready: Any) -> list[str]:
    if jobs == 1:
        ran = []
        for step in todo:
            if ready(step):
                if ctx.progress:
                    print(f"[{ctx.table}] {step.label}", flush=True)
                step.unit.run(progress=ctx.progress, force=ctx.force and step.unit.kind != "train")
                ran.append(step.key)
        return ran
    from longred_bench.reproduce.pool import Unit, run_units_parallel

    units = [Unit(_compute, (s.unit, ctx.force), s.label, s.cost, s.key, s.after,
                  ("train" if s.unit.kind == "train" else "unit", s.unit.work))
             for s in todo]  # fmt: skip
    steps = {s.key: s for s in todo}
    return run_units_parallel(units, jobs, name=ctx.table, progress=ctx.progress,
                              ready=lambda u: ready(steps[u.key]))  # fmt: skip


def records_of(ctx: Context) -> list[dict[str, Any]]:
    """Every record of table ``ctx`` (computing what the cache lacks)."""
    spec = get_spec(ctx.table)
    return spec.records(ctx) if spec.records is not None else gather(ctx, spec.steps(ctx))


def command_of(
    table: str, profile: Profile, jobs: int, options: dict[str, Any], out: Path | None = None
) -> str:
    """The command line that reproduces this call, as it can be run again: a built-in profile by
    name, a file by its absolute path; ``--out`` where ``out`` is not the table's default."""
    import shlex

    from longred_bench.reproduce.cluster import profile_arg

    return (f"longred-bench reproduce {table} --profile {shlex.quote(profile_arg(profile))}"
            + (f" --jobs {jobs}" if jobs != 1 else "") + option_args(options)
            + out_arg(profile, options, out))  # fmt: skip


def out_arg(profile: Profile, options: dict[str, Any], out: Path | None) -> str:
    """`` --out OUT`` for an ``out`` other than the table's default folder, else nothing."""
    import shlex

    return f" --out {shlex.quote(str(out))}" if out and out != default_out(profile, options) else ""


def default_out(profile: Profile, options: dict[str, Any]) -> Path:
    """``reports/<profile>`` (``d1-<variant>`` below it for a Table 3 data variant)."""
    out = Path("reports") / profile.name
    return out / f"d1-{options['d1']}" if options.get("d1") else out


def reproduce(
    table: str,
    profile: str | Path | None,
    out: Path | None = None,
    *,
    force: bool = False,
    progress: bool = True,
    jobs: int = 1,
    d1: str | None = None,
    dry_run: bool = False,
    list_units: bool = False,
    unit: str | None = None,
    emit_slurm: Path | None = None,
    rebuild: bool = False,
) -> list[Path]:
    """Run (or reuse) every unit of ``table`` (or ``all``) at ``profile`` (a built-in name or a
    YAML path) and write its report; the paths written (none with ``dry_run``, which prints
    the plan). ``profile`` None: the table's default (``tiny`` for ``all``). ``list_units``,
    ``unit`` and ``emit_slurm``: the table unit by unit (:mod:`longred_bench.reproduce.cluster`).
    ``rebuild``: write the report again from the records in the output folder, with this
    version's rules, and compute nothing (:func:`.output.rebuild_outputs`)."""
    if profile is None:
        profile = "tiny" if table == "all" else get_spec(table).default_profile
    stated = checked_profile(profile)
    if rebuild:
        return _rebuild(table, stated, out, d1)
    prof = choose_model(stated)
    fallback_for = stated.model.name if prof.model.name != stated.model.name else None
    if jobs < 1:
        raise UserError(f"--jobs must be at least 1, got {jobs}")
    if d1 is not None and table != "table3":
        raise UserError(f"--d1 applies to table3 only; run {table} without it")
    from longred_bench.reproduce.grid import D1_VARIANTS

    if d1 is not None and d1 not in D1_VARIANTS:
        raise UserError(f"unknown --d1 {d1!r}; variants: {', '.join(D1_VARIANTS)}")
    options = {"d1": d1} if d1 not in (None, "retrieval") else {}
    tables = all_tables(prof) if table == "all" else [table]
    if read_cheaply(prof.model.name):  # its stated window and depth first: the tables' plans
        check_model(prof, fallback_for)  # are built on them (a wrong window misread as a RULER fit)
    ctxs = [get_spec(t).resolve(prof, progress=progress, force=force,
                                options=options if t == "table3" else {})
            for t in tables]  # fmt: skip
    if options.get("d1"):
        _check_d1_differs(next(c for c in ctxs if c.table == "table3"))
    if dry_run:
        from longred_bench.reproduce.plan import plan_text

        if local_model(prof.model.name):  # a wrong window or extension, before the plan
            by_table = {c.table: get_spec(c.table).steps(c) for c in ctxs}
            check_model(prof, fallback_for, extensions_of(by_table))
        print(plan_text(ctxs, jobs), end="")
        return []
    if list_units or unit is not None or emit_slurm is not None:
        pinned = (None if stated.model.fallback is None or local_model(stated.model.name)
                  else "fallback" if fallback_for else "hub")  # fmt: skip
        return _unit_by_unit(ctxs, list_units=list_units, unit=unit, emit_slurm=emit_slurm,
                             out=out, fallback_for=fallback_for, pinned=pinned)  # fmt: skip
    for ctx in ctxs:  # before anything is fetched, built or computed: another profile's report
        check_report_profile(out or default_out(prof, ctx.options), ctx.table, prof.name)
    by_table = {c.table: get_spec(c.table).steps(c) for c in ctxs}
    steps = [s for table_steps in by_table.values() for s in table_steps]
    check_can_run(prof, steps, force=force, table=table)
    # The model and its extensions before any data is fetched where its config is at hand,
    # else once the fetch has brought it (a zoo model is a fetched source); then the training
    # units' own startup checks, which read the window the model check confirms.
    at_hand = config_at_hand(prof.model.name)
    loads = any(needed(s, force) for s in steps)  # units to compute: a local folder's files too
    training = [s for s in steps if s.unit.kind == "train" and needed(s, force)]
    if steps and at_hand:
        check_model(prof, fallback_for, extensions_of(by_table), files=loads)
        check_startup(prof, training, table)
    fetch_missing(needed_sources(steps), progress=progress)
    if steps and not at_hand:
        check_model(prof, fallback_for, extensions_of(by_table), files=loads)
        check_startup(prof, training, table)
    if steps:
        check_teachers(prof, steps)
    from longred_bench.reproduce.ruler_fit import check_table_tasks, profile_words

    for ctx in ctxs:  # each RULER task's first sample at the shortest length, its data here
        check_table_tasks(ctx)
    build_tiny_base_first(prof, steps, force=force, progress=progress)
    paths: list[Path] = []
    for ctx in ctxs:
        if progress and len(ctxs) > 1:
            print(f"[all] {ctx.table} --profile {prof.name}", flush=True)
        with profile_words(ctx):  # a RULER length too short: the profile's keys, not eval's
            paths += run_table(ctx, out or default_out(prof, ctx.options), jobs=jobs)
    return paths


def build_tiny_base_first(prof: Profile, steps: list[Step], *, force: bool,
                          progress: bool) -> None:  # fmt: skip
    """Build tiny-base, the profile's model, before any unit runs where this cache lacks it and
    a unit is to be computed, as the dry run's plan says, with the call's progress (``--quiet``:
    none). The first unit to load it built it, its bars drawn under ``--quiet`` too."""
    if prof.model.name != "tiny-base" or not any(needed(s, force) for s in steps):
        return
    from longred_bench.jobs.limits import tiny_base_built
    from longred_bench.jobs.tiny_base import tiny_base_dir

    if not tiny_base_built():
        tiny_base_dir(progress=progress)


def _check_d1_differs(ctx: Context) -> None:
    """Refuse a Table 3 data variant that changes no run: ``--d1 prose`` drops the long-data
    keys of the runs' overrides, and where the profile's overrides set none, its runs are the
    default's, trained again under other keys into a report folder of their own."""
    from longred_bench.reproduce.grid import D1_KEYS

    over = {**ctx.profile.runs.overrides, **(getattr(ctx.settings, "overrides", None) or {})}
    if not any(over.get(k) is not None for k in D1_KEYS):
        raise UserError(f"--d1 {ctx.options['d1']}: at profile {ctx.profile.name} Table 3's runs "
                        f"already train on each recipe's own long data (no {' or '.join(D1_KEYS)}"
                        " in runs.overrides or tables.table3.overrides): the variant would run "
                        "the same table again; run it without --d1")  # fmt: skip


def _rebuild(table: str, prof: Profile, out: Path | None, d1: str | None) -> list[Path]:
    """``--rebuild``: every named table's report, again from its records in its output folder."""
    from longred_bench.reproduce.output import planned_rows, rebuild_outputs

    options = {"d1": d1} if d1 not in (None, "retrieval") else {}
    paths: list[Path] = []
    for name in all_tables(prof) if table == "all" else [table]:
        spec = get_spec(name)
        if table == "all" and (spec.build is None or spec.write is not None):
            continue  # a table that writes its own outputs has no records report to rebuild
        opts = options if name == "table3" else {}
        folder = out or default_out(prof, opts)
        command = command_of(name, prof, 1, opts) + " --rebuild" + out_arg(prof, opts, folder)
        build = None if spec.write is not None else spec.build
        models = tuple(m for m in (prof.model.name, prof.model.fallback) if m)
        planned = partial(planned_rows, name, prof, opts)
        paths += rebuild_outputs(name, build, folder, profile=prof.name, command=command,
                                 models=models, planned=planned)  # fmt: skip
    return paths


def _unit_by_unit(
    ctxs: list[Context], *, list_units: bool, unit: str | None, emit_slurm: Path | None,
    out: Path | None, fallback_for: str | None = None, pinned: str | None = None,
) -> list[Path]:  # fmt: skip
    from longred_bench.reproduce import cluster

    if len(ctxs) != 1:
        raise UserError("--list-units, --unit and --emit-slurm take one table, not `all`")
    if sum([list_units, unit is not None, emit_slurm is not None]) > 1:
        raise UserError("give one of --list-units, --unit and --emit-slurm")
    ctx = ctxs[0]
    if list_units or emit_slurm is not None:  # what the listed units will run on, here
        steps = get_spec(ctx.table).steps(ctx)
        # here, not on every node (nothing fetched); a listing, as a dry-run, reads a local
        # model's config only and no tokenizer (a zoo model's would load torch)
        at_hand = local_model if list_units else config_at_hand
        if at_hand(ctx.profile.model.name):  # the jobs load it: its files too
            check_model(ctx.profile, fallback_for, extensions_of({ctx.table: steps}),
                        files=emit_slurm is not None)  # fmt: skip
        if emit_slurm is not None:
            check_teachers(ctx.profile, steps)
    if list_units:
        print(cluster.list_units(ctx), end="")
        return []
    if emit_slurm is not None:
        from longred_bench.reproduce.hub_data import data_pin, hub_id, pin_note

        hub_model = hub_id(ctx.profile.model.name)  # every node reads it from the hub
        data, members = data_pin((s.unit.config for s in steps if s.unit.cached() is None),
                                 hub_model=hub_model)  # fmt: skip
        paths = cluster.emit_slurm(ctx, emit_slurm, out, code_eval=_code_eval_units(ctx),
                                   pinned=pinned, data=data)  # fmt: skip
        if data is not None:
            print(pin_note(data, members, hub_model if data == "hub" else None))
        if missing := missing_sources(needed_sources(steps)):  # else each task fetches them
            advice = ("fetch them here before submitting, or every array task fetches them at "
                      "once (a node without a registry fails)")  # fmt: skip
            print(fetch_note(missing, "the jobs read", advice))
        return paths
    step, steps = cluster.unit_step(ctx, unit)
    check_can_run(ctx.profile, [step], table=ctx.table)
    check_model(ctx.profile, fallback_for, extensions_of({ctx.table: [step]}),
                files=step.unit.cached() is None)  # fmt: skip
    check_teachers(ctx.profile, [step])
    from longred_bench.reproduce.ruler_fit import profile_words

    with profile_words(ctx):
        print(cluster.run_unit(ctx, step, steps), flush=True)
    return []


def run_table(ctx: Context, out: Path, *, jobs: int = 1) -> list[Path]:
    """Compute, gather and write one table (see the module docstring)."""
    from longred_bench.reproduce.output import write_outputs
    from longred_bench.reproduce.pool import wall_note

    spec = get_spec(ctx.table)
    load_start = os.getloadavg()[0]
    start = time.perf_counter()
    table_jobs = jobs if spec.parallel else 1
    run_steps(ctx, table_jobs)
    records = records_of(ctx)
    command = command_of(ctx.table, ctx.profile, table_jobs, ctx.options, out)
    report = {
        "profile": ctx.profile.name,
        "command": command
        + (" --allow-code-eval" if _runs_code(ctx) else "")
        + (" --force" if ctx.force else ""),
        "wall_seconds": time.perf_counter() - start,
        "wall_note": wall_note(table_jobs, load_start, forced=ctx.force),
    }
    if spec.write is not None:
        return spec.write(ctx, records, out, report)
    return write_outputs(ctx.table, spec.build, records, out, **report)


def check_teachers(profile: Profile, steps: list[Step]) -> None:
    """A training unit of ``steps`` still to run whose teacher (set in the profile) has another
    tokenizer than its model is refused in one line naming the unit, before any unit runs (not
    when its turn comes, after the table's other units)."""
    from longred_bench.jobs.same_tokens import Mismatch, check_training_models

    seen: set[tuple[Any, ...]] = set()
    for step in steps:
        cfg = step.unit.config
        pair = (cfg.get("recipe"), cfg.get("model"), cfg.get("teacher"), bool(cfg.get("layers")))
        if step.unit.kind == "train" and pair not in seen and needed(step, False):
            seen.add(pair)  # each model and teacher once: a tokenizer loads in seconds
            try:
                check_training_models(cfg, roles=("teacher",))
            except Mismatch as exc:
                raise UserError(f"profile {profile.source or profile.name}: {step.label}: "
                                f"{exc}") from None  # fmt: skip


def _code_eval_units(ctx: Context) -> bool:
    """Whether the table's pending ``paper_short`` units run code tasks, which the user allowed
    (refused in one line otherwise): the permission is given where SLURM scripts are written."""
    paper = [s for s in paper_short_steps(get_spec(ctx.table).steps(ctx)) if needed(s, False)]
    if not paper:
        return False
    from longred_bench.evaluation.paper_suite import check_code_units, code_tasks

    tasks = pending_tasks(paper)
    check_code_units(tasks, f"profile {ctx.profile.name}")
    return bool(code_tasks(tasks))


def _runs_code(ctx: Context) -> bool:
    """Whether the table's ``paper_short`` units run code tasks (cached or not): its command
    needs ``--allow-code-eval`` to run again where they are not cached."""
    from longred_bench.evaluation.paper_suite import code_tasks

    paper = paper_short_steps(get_spec(ctx.table).steps(ctx))
    return bool(paper) and bool(code_tasks(pending_tasks(paper)))
