"""``reproduce ... --dry-run``: every unit of the tables asked, cached or not, and how long the
rest would take; nothing is run and no model is loaded.

Units are keyed as the real call keys them (their cache folders), so a unit two tables share
counts once in the total. A cached unit's time is its own (a training run's ``run.json``, an
evaluation's ``timing.json``); an uncached one's is estimated from what the run cache records
(:mod:`~longred_bench.reproduce.plan_estimate`: a training run from the cached runs' seconds per
token, of the same recipe where there are some, else of every recipe, times its tokens; an
evaluation or measurement from the same one cached at another size (:data:`COUNT_KEYS`:
``samples``, ``limit``) or batch size, per item, else from the recorded times of its suite of the
same model anywhere in the run cache, per item where both state a size, else
:data:`~longred_bench.reproduce.grid.UNIT_COST` of a CPT run of its model (measured at ``tiny``:
an evaluation is about a third of a CPT run), a rough guess the plan calls one; a merge is one
second). A profile whose model has a known shape adds each unit's GPU estimate
(:mod:`~longred_bench.reproduce.costs`); the units it runs on the CPU keep their seconds, counted
beside the GPU-hours. A table whose units depend on others' results (PCD's test split) says so in
a line; data the run would fetch first is named with the command that fetches it. For
``paper``, the papers' own configurations follow (:func:`paper_plan`).

Every training unit to run goes through the checks its run makes at startup, before a model
loads (:func:`startup_error`: the rows of a micro-step split over the profile's processes, the
long rows against the original and extended windows); a unit that would stop there is listed
with the run's own one-line error, and the total counts such units.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longred_bench.reproduce.paper_plan import PAPER_PROFILES
from longred_bench.reproduce.plan_estimate import (  # noqa: F401 (the plan's names, re-exported)
    COUNT_KEYS,
    GUESS,
    MERGE_SECONDS,
    OTHER_MODELS,
    _sizeless,
    basis_text,
    count,
    estimate,
    estimate_rule,
    other_sizes_rate,
    recorded_units,
    root_model,
    settings_of,
    unit_model,
)
from longred_bench.reproduce.pool import duration, hours_text
from longred_bench.reproduce.spec import Context
from longred_bench.reproduce.startup import startup_error as startup_error  # re-exported
from longred_bench.wording import counted


@dataclass(frozen=True)
class PlannedUnit:
    """One unit of a table: ``key`` identifies it across tables (its cache folder)."""

    key: str
    label: str
    kind: str  # "train", "eval", "drift" or "psa"
    cached: bool
    seconds: float | None  # measured (cached units) or estimated; None: unknown
    recipe: str = ""
    tokens: int = 0
    suite: str = ""  # an evaluation's suite (``short_tiny``, ``ruler``, ``ppl``)
    tasks: tuple[str, ...] = ()  # an evaluation's tasks (empty: the suite's own)
    command: str = ""  # the command that computes it alone (profiles with GPU costs)
    cost: Any = None  # its GPU estimate (:class:`~longred_bench.reproduce.costs.UnitCost`)
    cpu: bool = False  # the profile runs it on the CPU (its config's ``device``): no GPU estimate
    error: str = ""  # the error its run would stop with at startup (:func:`startup_error`)
    config: dict[str, Any] | None = None  # a training unit's config (its data's epochs)
    items: int | None = None  # an evaluation's items (:func:`count`); None: not stated
    per_item: float | None = None  # seconds per item of the same evaluation cached at other sizes
    basis: str = ""  # how ``seconds`` was estimated (:func:`estimate`); "": measured or unknown
    model: str | None = None  # the model it started from (:func:`root_model`); None: not told
    settings: str = ""  # an evaluation's work besides its size (:func:`settings_of`)
    sources: tuple[str, ...] = ()  # the offline data it reads (``reproduce.sources``)


def planned_units(ctx: Context) -> list[PlannedUnit]:
    """Every unit of table ``ctx``, cached or not (seconds: measured where cached), with the
    model it started from (:func:`root_model`) and the data it reads; with its command and GPU
    estimate where the profile's model has a known shape."""
    from longred_bench.reproduce.cluster import unit_command
    from longred_bench.reproduce.costs import on_cpu, reads_training_code, shows_costs, unit_cost
    from longred_bench.reproduce.registry import get_spec
    from longred_bench.reproduce.sources import unit_sources

    runs: dict[str, str] = {}  # the table's runs by folder name: the model each trains
    read: dict[str, str | None] = {}
    costs = shows_costs(ctx.profile)
    # The startup checks ask the training code (torch): run where the plan already does (GPU
    # estimates) or where rows are split over processes (one process reads any row count).
    checks = reads_training_code(ctx.profile)
    out = []
    folders: dict[Path, list[tuple[dict[str, Any], int | None, float | None]]] = {}
    for step in get_spec(ctx.table).steps(ctx):
        unit, cfg = step.unit, step.unit.config
        cached = unit.cached() is not None
        seconds = unit.seconds() if cached else None
        extra: dict[str, Any] = {"sources": tuple(sorted(unit_sources(unit.kind, cfg)))}
        if costs and on_cpu(step, ctx.profile):
            extra |= {"command": unit_command(ctx, step), "cpu": True}
        elif costs:
            extra |= {"command": unit_command(ctx, step), "cost": unit_cost(step, ctx.profile)}
        if unit.kind == "train":
            runs[Path(unit.folder).name] = str(cfg.get("model") or "")
            tokens = int(cfg["steps"]) * int(cfg["tokens_per_step"])
            if checks and not cached:
                extra["error"] = startup_error(cfg, ctx.profile)
            out.append(PlannedUnit(step.key, step.label, "train", cached, seconds,
                                   cfg["recipe"], tokens, config=cfg,
                                   model=root_model(runs[Path(unit.folder).name], runs, read),
                                   **extra))  # fmt: skip
        else:
            suite = str(cfg.get("suite", unit.kind))
            rate = None if cached else other_sizes_rate(unit, folders)
            out.append(PlannedUnit(step.key, step.label, unit.kind, cached, seconds,
                                   suite=suite, tasks=tuple(cfg.get("tasks") or ()),
                                   items=count(cfg), per_item=rate,
                                   model=root_model(unit_model(cfg), runs, read),
                                   settings=settings_of(cfg), **extra))  # fmt: skip
    return out


def _gpu(cost: Any) -> str:
    """A unit's GPU estimate in a few words."""
    hours = ("GPU-hours not estimated" if cost.gpu_hours is None
             else hours_text(cost.gpu_hours, 2, "GPU-h"))  # fmt: skip
    memory = "" if cost.gib_per_gpu is None else f", {cost.gib_per_gpu:.1f} GiB per GPU"
    if cost.host_gib_per_gpu:
        memory += f" + {cost.host_gib_per_gpu:.1f} GiB of pinned host memory (offload)"
    return hours + memory


def _costed(unit: PlannedUnit) -> bool:
    """Whether ``unit`` is planned in GPU terms (an estimate, or a CPU unit of such a plan)."""
    return unit.cost is not None or unit.cpu


def gpu_totals(units: list[PlannedUnit], hardware: Any,
               seconds: dict[str, float | None] | None = None, jobs: int = 1) -> str:  # fmt: skip
    """The GPU-hours of ``units`` (those estimated), the largest memory per GPU and the units
    whose estimate exceeds ``hardware.gpu_memory_gib``; the units run on the CPU with their
    estimated compute (:func:`_left`, from ``seconds`` by key, else their own, with ``jobs``
    workers), as a plan of no GPU gives it."""
    costs = [u.cost for u in units if u.cost is not None]
    on_cpu = [u for u in units if u.cpu]
    seconds = {u.key: u.seconds for u in units} if seconds is None else seconds
    cpu = f"{len(on_cpu)} unit(s) on the CPU" if on_cpu else ""
    if on_cpu:
        left = _left(on_cpu, seconds, jobs)
        cpu += f" ({'no time estimate' if left == 'no estimate' else left}"
    if not costs:
        return f"{cpu}; no GPU estimate)"
    hours = sum(c.gpu_hours for c in costs if c.gpu_hours is not None)
    unknown = sum(1 for c in costs if c.gpu_hours is None)
    peak = max((c.gib_per_gpu for c in costs if c.gib_per_gpu is not None), default=0.0)
    over = [u.label for u in units if u.cost is not None and u.cost.gib_per_gpu is not None
            and u.cost.gib_per_gpu > hardware.gpu_memory_gib]  # fmt: skip
    text = f"{hours_text(hours, 1, 'GPU-hours')} ({wall_clock(units, hardware.nproc_per_node)})"
    text += f", {unknown} unit(s) not estimated" if unknown else ""
    text += f", {cpu}, not in the GPU-hours)" if cpu else ""
    text += f"; at most {peak:.1f} GiB per GPU"
    if over:
        text += (f"; {len(over)} unit(s) over {hardware.gpu_memory_gib:g} GiB per GPU "
                 f"(e.g. {over[0]})")  # fmt: skip
    return text


def wall_clock(units: list[PlannedUnit], gpus: int) -> str:
    """The hours ``units`` (those estimated) take on one node of ``gpus`` GPUs: a training run
    uses every GPU (its GPU-hours / ``gpus``); the other units use one GPU each, so they take
    their GPU-hours / ``gpus`` only when ``gpus`` of them run at a time, and their GPU-hours
    one after another."""
    hours = {"train": 0.0, "other": 0.0}
    for u in units:
        if u.cost is not None and u.cost.gpu_hours is not None:
            hours["train" if u.kind == "train" else "other"] += u.cost.gpu_hours
    packed = (hours["train"] + hours["other"]) / gpus
    if gpus == 1:
        return f"{hours_text(packed, 1, 'h')} on 1 GPU"
    serial = hours["train"] / gpus + hours["other"]
    return (f"{hours_text(packed, 1, 'h')} on a node of {gpus} GPUs with the one-GPU units "
            f"{gpus} at a time, {hours_text(serial, 1, 'h')} with them one at a time")  # fmt: skip


def _left(todo: list[PlannedUnit], seconds: dict[str, float | None], jobs: int = 1) -> str:
    """The estimated compute of ``todo`` (with ``jobs`` workers), and how many units have no
    estimate. Workers share the usable cores: the sum is shared by no more of them than there
    are cores, and no share is shorter than the longest unit (8 jobs on 2 cores read a quarter
    of the time its longest unit takes)."""
    from longred_bench.reproduce.pool import usable_cores

    known = [seconds[u.key] for u in todo if seconds[u.key] is not None]
    unknown = len(todo) - len(known)
    if not todo:
        return "nothing to compute"
    if not known:
        return "no estimate"
    cores = usable_cores()
    wall = max(max(known), sum(known) / min(jobs, cores))  # one job: the sum
    text = f"about {duration(wall)} of compute"
    text += f" with {jobs} job(s)" if jobs != 1 else ""
    text += f" on {cores} core(s)" if jobs > cores else ""
    if unknown:  # the sum is of the estimated units only
        text += f" for the {len(known)} with an estimate, {unknown} without one"
    return text


def distinct_units(units: list[PlannedUnit]) -> tuple[list[PlannedUnit], dict[str, list[str]]]:
    """``units`` once each, where first listed (as ``--list-units`` lists them), and per unit
    the labels of the later rows that ask for the same unit (Table 6's ``short-eighth`` row is
    ``longred-c`` where the eighth is the short length)."""
    first: dict[str, PlannedUnit] = {}
    also: dict[str, list[str]] = {}
    for u in units:
        if u.key in first:
            also[u.key].append(u.label)
        else:
            first[u.key], also[u.key] = u, []
    return list(first.values()), also


def shadowed_keys(ctx: Context, recipes: set[str] | None = None) -> list[str]:
    """Notes on the ``training.<recipe>`` keys of the user's own profile files
    (:func:`user_training_keys`) that a training table's overrides replace in its runs
    (``runs.overrides``, then ``tables.<t>.overrides``, win over a recipe's own section): a
    value set in one place and run from another, without a word, otherwise. ``recipes``: only
    those the table trains (Table 3 was told of ten keys of recipes it never runs)."""
    table = getattr(ctx.settings, "overrides", None)
    if table is None:  # not a table of training runs
        return []
    prof = ctx.profile
    mine = user_training_keys(prof)
    where = {k: f"runs.overrides.{k}" for k in prof.runs.overrides}
    where.update({k: f"tables.{ctx.table}.overrides.{k}" for k in table})
    over = {**prof.runs.overrides, **table}
    shadowed: dict[str, list[str]] = {}  # key: each recipe section it replaces, in one note
    for recipe, keys in sorted(prof.training.items()):
        if recipes is not None and recipe not in recipes:
            continue
        for key, value in (keys or {}).items():
            replaced = key in over and over[key] is not None and over[key] != value
            if replaced and (recipe, key) in mine:
                shadowed.setdefault(key, []).append(f"`training.{recipe}.{key}` ({value})")
    notes = []
    for key, sections in shadowed.items():
        cap = (" (a run beyond the original window trains at most its extension's window)"
               if key == "long_len" else "")  # fmt: skip
        notes.append(f"{key}: the table's runs take `{where[key]}` ({over[key]}){cap}, not "
                     f"{', '.join(sections)}; set `{where[key]}: null` to let each recipe's "
                     "section decide")  # fmt: skip
    return notes


def evaluation_notes(ctx: Context) -> list[str]:
    """``tables.fig2.evaluation.short.limit (40), not evaluation.short.limit (5)``: each key of
    table ``ctx``'s own ``evaluation`` section whose value differs from the profile's (a file's
    ``evaluation.short.limit`` was taken by every table but one, without a word)."""
    from longred_bench.profiles.schema import to_dict

    own = getattr(ctx.settings, "evaluation", None)
    notes: list[str] = []

    def walk(mine: Any, theirs: Any, path: str) -> None:
        if isinstance(mine, dict):
            for key, value in mine.items():
                there = theirs.get(key) if isinstance(theirs, dict) else None
                walk(value, there, f"{path}.{key}")
        elif mine != theirs and not (isinstance(mine, list) and list(theirs or ()) == mine):
            said = "unset" if theirs is None else theirs
            notes.append(f"`tables.{ctx.table}.{path}` ({mine}), not `{path}` ({said})")

    if isinstance(own, dict):
        walk(own, to_dict(ctx.profile.evaluation), "evaluation")
    return notes


def user_training_keys(prof: Any) -> set[tuple[str, str]]:
    """The ``(recipe, key)`` pairs the ``training:`` sections of the profile's own files set:
    its file and the files it extends up to the first built-in profile (whose sections and
    overrides are the suite's own design)."""
    from pathlib import Path

    from longred_bench.profiles import BUILTIN
    from longred_bench.profiles.loader import builtin_path, profile_file, read_mapping

    builtin = {builtin_path(name).resolve() for name in BUILTIN}
    path, seen, out = Path(prof.source) if prof.source else None, set(), set()
    while path is not None and path.resolve() not in builtin | seen:
        seen.add(path.resolve())
        data = read_mapping(path)
        for recipe, keys in (data.get("training") or {}).items():
            if isinstance(keys, dict):
                out |= {(str(recipe), str(key)) for key in keys}
        parent = data.get("extends")
        path = profile_file(parent, relative_to=path) if parent else None
    return out


def plan_text(ctxs: list[Context], jobs: int) -> str:
    """The dry-run listing of tables ``ctxs`` (one profile): each distinct unit, cached or not,
    per table; the training data's epochs; then the distinct units to run in all and the
    estimated time with ``jobs`` workers."""
    from longred_bench.reproduce.paper_plan import KEY_ROWS, paper_plan, paper_short_lines
    from longred_bench.reproduce.plan_data import data_note, data_section
    from longred_bench.reproduce.registry import get_spec

    profile = ctxs[0].profile
    planned = {ctx.table: planned_units(ctx) for ctx in ctxs}
    runs = {Path(u.key).name: str(u.config.get("model") or "") for units in planned.values()
            for u in units if u.kind == "train" and u.config}  # fmt: skip
    recorded = recorded_units(runs, {})
    every = estimate([u for units in planned.values() for u in units], recorded)
    seconds = {u.key: u.seconds for u in every}
    basis = {u.key: u.basis for u in every}
    tables = " ".join(c.table for c in ctxs) if len(ctxs) <= 3 else f"{len(ctxs)} tables"
    lines = [f"reproduce {tables} --profile {profile.name} --dry-run ({jobs} job(s)); nothing is "
             "run", ""]  # fmt: skip
    notes: list[str] = []  # each table's note, repeated under the counts of several tables
    for ctx in ctxs:
        units, also = distinct_units(planned[ctx.table])
        todo = [u for u in units if not u.cached]
        left = (gpu_totals(todo, profile.hardware, seconds) if any(_costed(u) for u in todo)
                else _left(todo, seconds))  # fmt: skip
        lines.append(f"{ctx.table}: {counted(len(units), 'unit')}, "
                     f"{len(units) - len(todo)} cached, {len(todo)} to run ({left})")  # fmt: skip
        own = getattr(ctx.settings, "extensions", None)
        if own is not None and tuple(own) != tuple(ctx.profile.runs.extensions):
            lines.append(f"  at {', '.join(own)}: `tables.{ctx.table}.extensions`, not "
                         f"`runs.extensions` ({', '.join(ctx.profile.runs.extensions) or 'none'})"
                         "; set the table's own to change it")  # fmt: skip
        trained = {u.recipe for u in planned[ctx.table] if u.kind == "train"}
        lines += [f"  {note}" for note in shadowed_keys(ctx, trained)]
        if moved := evaluation_notes(ctx):
            lines.append(f"  evaluation: {'; '.join(moved)}; set the table's own to change it")
        own_seeds = getattr(ctx.settings, "seeds", None)
        if own_seeds is not None and own_seeds != ctx.profile.runs.seeds:
            lines.append(f"  seeds: `tables.{ctx.table}.seeds` ({own_seeds}), not `runs.seeds` "
                         f"({ctx.profile.runs.seeds}); set the table's own to change "
                         "it")  # fmt: skip
        for u in units:
            state = "cached" if u.cached else "to run"
            timing = _gpu(u.cost) if u.cost is not None else duration(seconds[u.key])
            if u.cost is None:  # not beside GPU-hours' own model
                timing += basis_text(u, basis[u.key])
            if u.cpu:  # its seconds, as a plan of no GPU gives them
                timing = f"on the CPU, {timing}"
            if u.error:
                timing = f"cannot start: {u.error}; {timing}"
            lines.append(f"  {state:>7}  {u.label}  ({timing})")
            if also[u.key]:
                lines.append(f"           the same unit as: {'; '.join(also[u.key])}")
            if u.command and not u.cached:
                lines.append(f"           $ {u.command}")
        spec = get_spec(ctx.table)
        note = spec.note(ctx) if spec.note is not None else None
        if note:
            lines.append(f"  {note}")
            notes.append(f"{ctx.table}: {note}")
        lines.append("")
    distinct = {u.key: u for u in every}
    todo = [u for u in distinct.values() if not u.cached]
    lines += data_section(todo, profile)
    lines += data_note(distinct.values())  # before the counts: the run's first step
    counts = (f"In all: {counted(len(distinct), 'distinct unit')}, "
              f"{len(distinct) - len(todo)} cached, "
              f"{len(todo)} to run")  # fmt: skip
    stopped = [u for u in todo if u.error]
    if stopped:
        counts += (f", {len(stopped)} of which cannot start as configured (e.g. "
                   f"{stopped[0].label}: {stopped[0].error})")  # fmt: skip
    rule = estimate_rule(todo, seconds, basis)
    if not any(_costed(u) for u in todo):
        lines.append(f"{counts} ({_left(todo, seconds, jobs)}). {rule}.")
    else:
        how = how_estimated(todo, profile)
        cpu = (f" The times of the units on the CPU: {rule.removeprefix('Estimates: ')}."
               if any(u.cpu for u in todo) else "")  # fmt: skip
        lines.append(f"{counts}: {gpu_totals(todo, profile.hardware, seconds, jobs)}.{how}{cpu}")
    if len(ctxs) > 1 and notes:  # what the counts leave out, each table's note again
        lines.append("Besides the units: " + "; ".join(notes) + ".")
    if todo:  # said at the end even where tiny_base's own note (13th in `all`) says it too
        lines += tiny_base_build(profile.model.name, "the profile's model")
    if profile.name in PAPER_PROFILES and len(ctxs) > 1:
        from longred_bench.profiles import load_profile

        others = [load_profile(n) for n in PAPER_PROFILES if n != profile.name]
        lines += ["", paper_plan(profile)]
        lines += [x for other in others for x in ("", paper_plan(other, KEY_ROWS))]
    paper_short = {u.tasks for units in planned.values() for u in units
                   if u.suite == "paper_short"}  # fmt: skip
    if paper_short:
        lines += ["", *paper_short_lines(paper_short)]
    if profile.about.values:
        lines += ["", f"Where the values of {profile.name} come from:"]
        lines += [f"- {key}: {text}" for key, text in profile.about.values.items()]
    return "\n".join(lines) + "\n"


def how_estimated(todo: list[PlannedUnit], profile: Any) -> str:
    """How the GPU-hours of ``todo`` were estimated, and which units were not (by suite), in a
    sentence or two; empty where none has a GPU estimate."""
    from longred_bench.evaluation.paper_suite import SUITE
    from longred_bench.reproduce.costs import SHORT_SUITE_TASKS

    costed = [u for u in todo if u.cost is not None]
    if not costed:
        return ""
    hw = profile.hardware
    text = (f" GPU-hours: model FLOPs / ({hw.gpu_tflops:g} TFLOP/s x MFU {hw.mfu:g}), the "
            "profile's hardware.gpu_tflops and hardware.mfu: an assumed utilisation until "
            "measured on your GPUs (docs/reproduce.md)")  # fmt: skip
    short = (*SHORT_SUITE_TASKS, SUITE)
    counted = sorted({u.suite for u in costed if u.suite in short and u.cost.gpu_hours is not None})
    if counted:
        text += (
            f"; the {', '.join(counted)} evaluations from their tasks' tokens as "
            "SmolLM2's tokenizer counts them, each generation at its token cap (an upper "
            "bound on their FLOPs, not on their time: a small model's evaluation runs far "
            "below the assumed MFU, so it likely takes longer; not measured on a GPU)"
        )
    unestimated: dict[str, int] = {}
    for u in costed:
        if u.cost.gpu_hours is None:
            what = f"{u.suite} evaluation(s)" if u.kind == "eval" else f"{u.kind} unit(s)"
            unestimated[what] = unestimated.get(what, 0) + 1
    if unestimated:
        text += "; not estimated, so not in the GPU-hours: " + ", ".join(
            f"{n} {what}" for what, n in unestimated.items())  # fmt: skip
        if f"{SUITE} evaluation(s)" in unestimated:
            text += f" ({SUITE}: its members' tokens are not counted offline, see below)"
    return text + "."


def tiny_base_build(model: str, role: str) -> list[str]:
    """A plan's line that ``model``, where it is tiny-base (``role``: what it is to the plan),
    is built before anything runs (not counted in the plan: 15 minutes the first time), where
    this cache lacks it."""
    from longred_bench.jobs.limits import tiny_base_built

    if model != "tiny-base" or tiny_base_built():
        return []
    return [f"Before anything runs: tiny-base, {role}, is built (about 15 min on 2 CPU cores; "
            "not counted above): not built in this cache yet."]  # fmt: skip
