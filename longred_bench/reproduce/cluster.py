"""A table unit by unit, for a cluster's scheduler: ``--list-units`` (one JSON line per unit: its
id, kind, label, the units it waits for, the command that computes it, cached or not, and its
GPU estimate where the profile's model has a known shape),
``--unit ID`` (computes that one unit into the shared run cache; a no-op when cached) and
``--emit-slurm DIR`` (a SLURM job array per dependency level, then the report job). Every command
printed carries the table's options (``--d1 prose``) and, for a unit that runs ``paper_short``'s
code tasks, ``--allow-code-eval``: it runs as printed.

A unit's id is its label made shell-safe (``train_cpt_abf:theta=1e5_seed_0``): labels are unique
in a table and do not change when a unit's cache key does (a merge is keyed by its source run's
record), so ``--unit`` lists the table again and computes the unit under its current key. Units
that are known only once others are measured (PCD's test split) are computed by the final
``reproduce`` call, which also writes the report: any order of all listed units, then
``reproduce TABLE``, gives the report one call gives.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

from longred_bench.cache import ENV_VAR, cache_dir
from longred_bench.data.hub_corpora import DATA_FALLBACK, NO_FALLBACK
from longred_bench.errors import UserError, meant_note
from longred_bench.evaluation import paper_suite
from longred_bench.profiles.schema import Profile
from longred_bench.reproduce.registry import get_spec
from longred_bench.reproduce.spec import Context, Step, option_args

CPUS_PER_GPU = 8  # a GPU unit's host work: data loading, tokenising, lm-eval's scoring
# A unit the profile runs on the CPU: the two cores its timings were measured on, and all that
# `nox -s slurm_smoke`'s one-node SLURM has on such a machine (a job asking more is refused).
CPUS_CPU_UNIT = 2


def unit_id(step: Step) -> str:
    """A unit's id: its label with every run of other characters than letters, digits and
    ``.:=+-`` made one ``_``."""
    return re.sub(r"[^A-Za-z0-9.:=+-]+", "_", step.label).strip("_")


def profile_arg(profile: Profile) -> str:
    """How a command names ``profile``: a built-in one by name, a file by its absolute path."""
    from longred_bench.profiles import BUILTIN
    from longred_bench.profiles.loader import builtin_path

    source = Path(profile.source) if profile.source else None
    if profile.name in BUILTIN and source == builtin_path(profile.name).resolve():
        return profile.name
    return str(source) if source else profile.name


def runs_code(step: Step) -> bool:
    """Whether ``step`` evaluates ``paper_short`` tasks that execute model-written code."""
    cfg = step.unit.config
    return cfg.get("suite") == paper_suite.SUITE and bool(paper_suite.code_tasks(cfg.get("tasks")))


def unit_command(ctx: Context, step: Step) -> str:
    """The command that computes one unit, with the table's options (training under
    ``torchrun`` where the profile runs several processes per node; ``--allow-code-eval`` where
    the unit runs code tasks, which ``--unit`` refuses without it). A profile file's command,
    or any under a relative ``LONGRED_CACHE``, starts in the folder it was listed from
    (``cd DIR && ...``): the file's relative paths (``model.name: ./base``, local data) and the
    cache are read from there, as they were when it was listed."""
    base = (f"reproduce {ctx.table} --profile {shlex.quote(profile_arg(ctx.profile))}"
            f"{option_args(ctx.options)} --unit {shlex.quote(unit_id(step))}"
            + (f" {paper_suite.CODE_FLAG}" if runs_code(step) else ""))  # fmt: skip
    nproc = ctx.profile.hardware.nproc_per_node
    if step.unit.kind == "train" and nproc > 1:
        command = f"torchrun --standalone --nproc-per-node {nproc} -m longred_bench {base}"
    else:
        command = f"longred-bench {base}"
    from longred_bench.cache import ENV_VAR

    cache = os.environ.get(ENV_VAR, "")
    if profile_arg(ctx.profile) != ctx.profile.name or (cache and not Path(cache).is_absolute()):
        return f"cd {shlex.quote(str(Path.cwd()))} && {command}"
    return command


def listed(ctx: Context) -> list[dict[str, Any]]:
    """Every unit the table lists now (see the module docstring), in order, once each: a unit
    two rows share (``control``'s evaluations at both extensions) is listed where it first
    appears, so no two jobs compute one folder."""
    from longred_bench.reproduce.costs import on_cpu

    first: dict[str, Step] = {}
    for s in get_spec(ctx.table).steps(ctx):
        first.setdefault(s.key, s)
    steps = list(first.values())
    ids = {s.key: unit_id(s) for s in steps}
    return [
        {"id": ids[s.key], "kind": s.unit.kind, "label": s.label, "folder": s.key,
         "cached": s.unit.cached() is not None,
         "after": [ids[k] for k in s.after if k in ids], "command": unit_command(ctx, s),
         "device": "cpu" if on_cpu(s, ctx.profile) else "gpu", "estimate": _estimate(ctx, s)}
        for s in steps
    ]  # fmt: skip


def _estimate(ctx: Context, step: Step) -> dict[str, float | None] | None:
    """A unit's GPU estimate as the dry-run prints it (None where the profile's model has no
    known shape): GPU-hours, GiB per GPU, pinned host GiB per GPU (activation offload)."""
    from longred_bench.reproduce.costs import on_cpu, shows_costs, unit_cost

    if not shows_costs(ctx.profile) or on_cpu(step, ctx.profile):
        return None
    cost = unit_cost(step, ctx.profile)
    return {"gpu_hours": cost.gpu_hours, "gib_per_gpu": cost.gib_per_gpu,
            "host_gib_per_gpu": cost.host_gib_per_gpu}  # fmt: skip


def list_units(ctx: Context) -> str:
    """``--list-units``: one JSON line per unit, then the table's note (if any: units known only
    once others are measured) as a JSON line of its own, ``{"kind": "note", "note": ...}``, with
    no ``id``: a consumer keeps the lines whose ``kind`` is not ``note``."""
    lines = [json.dumps(u) for u in listed(ctx)]
    spec = get_spec(ctx.table)
    note = spec.note(ctx) if spec.note is not None else None
    if note:
        lines.append(json.dumps({"kind": "note", "note": note}))
    return "\n".join(lines) + "\n"


def unit_step(ctx: Context, uid: str) -> tuple[Step, list[Step]]:
    """The step of unit ``uid`` and every step of the table (a one-line error naming some ids
    when the table has no such unit)."""
    steps = get_spec(ctx.table).steps(ctx)
    by_id = {unit_id(s): s for s in steps}
    if uid not in by_id:
        near = [i for i in by_id if uid.split("_")[0] in i][:3] or list(by_id)[:3]
        raise UserError(f"{ctx.table} has no unit {uid!r} at profile {ctx.profile.name}"
                        f"{meant_note(uid, by_id)}; `--list-units` lists them (e.g. "
                        f"{', '.join(near)})")  # fmt: skip
    return by_id[uid], steps


def run_unit(ctx: Context, step: Step, steps: list[Step]) -> str:
    """``--unit ID``: compute ``step`` (a no-op when cached, unless ``--force`` asks an
    evaluation or measurement again, as it does of a table's); what was done, in one line. The
    units it waits for (among ``steps``) must be in the cache."""
    uid = unit_id(step)
    by_key = {s.key: s for s in steps}
    missing = [unit_id(by_key[k]) for k in step.after
               if k in by_key and by_key[k].unit.cached() is None]  # fmt: skip
    if missing:
        raise UserError(f"unit {uid} waits for {', '.join(missing)}: compute those first")
    forced = ctx.force and step.unit.kind != "train"  # --force: a training run is kept
    if not forced and step.unit.cached() is not None:
        return f"{uid}: cached ({step.key})"
    from longred_bench.reproduce.sources import fetch_missing, needed_sources

    fetch_missing(needed_sources([step]), progress=ctx.progress)
    outcome: list[str] = []
    if step.unit.kind == "train":
        _train(step, ctx.progress, outcome)
    else:
        step.unit.run(progress=ctx.progress, force=forced, outcome=outcome)
    if outcome[-1:] == ["taken"]:
        return f"{uid}: computed by another process meanwhile, taken from the cache ({step.key})"
    return f"{uid}: computed{' again (--force)' if forced else ''} ({step.key})"


def _train(step: Step, progress: bool, outcome: list[str]) -> None:
    """A training unit, on every process of a ``torchrun`` launch when there is one.

    Rank 0 holds the run's lock (:func:`~longred_bench.cache.build_lock`) while the launch
    trains it, and tells the other ranks what to do: where another process holds the lock
    (another job training the same run) the launch stops at once, rank 0 with one error line
    and the others without one (they cannot wait with rank 0); where the run was finished
    meanwhile, no rank trains it. A run folder with nothing to resume from is set aside and the
    run trained from the start, as :func:`~longred_bench.jobs.units.train_cached` does."""
    from longred_bench.training.distributed import init_distributed, leave_distributed

    rank, world = init_distributed()
    if world == 1:
        step.unit.run(progress=progress, outcome=outcome)
        return
    import contextlib

    import torch.distributed as dist

    from longred_bench.cache import build_lock
    from longred_bench.training.config import TrainConfig

    run_dir, cfg = step.unit.dir, TrainConfig.from_dict(step.unit.config)
    busy = (f"another process is training {run_dir}: run this unit again once it has "
            "finished (it then finds the run trained)")  # fmt: skip
    with contextlib.ExitStack() as held:
        todo = [None]
        if rank == 0:
            try:
                held.enter_context(build_lock(run_dir, busy=busy))
                todo = ["done" if step.unit.cached() is not None else "train"]
            except UserError:
                todo = ["busy"]
        dist.broadcast_object_list(todo, src=0)
        if todo[0] == "busy":  # every rank stops, its group closed (an open one can abort it)
            dist.destroy_process_group()
            if rank == 0:
                raise UserError(busy)
            raise SystemExit(1)  # rank 0 says why
        outcome.append("taken" if todo[0] == "done" else "computed")
        if todo[0] == "train":
            _train_ranks(cfg, run_dir, rank, world, progress)
    leave_distributed(world)  # after rank 0 wrote the run and let go of its lock


def _train_ranks(cfg: Any, run_dir: Path, rank: int, world: int, progress: bool) -> None:
    """Every rank's part of training ``cfg`` into ``run_dir`` under rank 0's lock: resumed
    where a checkpoint is (rank 0 first names a checkpoint it starts from where it lies now, in
    a cache that moved), else from the start after rank 0 sets the old folder aside."""
    import torch.distributed as dist

    from longred_bench.jobs.in_progress import training_now
    from longred_bench.jobs.key_root import follow_moved_cache
    from longred_bench.jobs.train import run_training
    from longred_bench.jobs.units import aside_of, finish_run, set_aside
    from longred_bench.training.checkpoint import latest_checkpoint

    resume = latest_checkpoint(run_dir) is not None
    if rank == 0 and resume:
        follow_moved_cache(run_dir, cfg)
    elif rank == 0:
        set_aside(run_dir)
    dist.barrier()  # the folder as rank 0 left it, before any rank reads it
    with training_now(run_dir):  # an interrupt's line names its checkpoint
        run_training(cfg, run_dir, resume=resume, progress=progress and rank == 0, rank=rank,
                     world=world)  # fmt: skip
    if rank == 0:
        finish_run(run_dir, cfg)
        shutil.rmtree(aside_of(run_dir), ignore_errors=True)


def levels(units: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The units not cached, by dependency level: a unit runs one level after the deepest unit
    it waits for (cached ones count as level 0)."""
    level: dict[str, int] = {}
    for u in units:  # a table lists a unit after the units it waits for
        level[u["id"]] = 0 if u["cached"] else 1 + max((level[a] for a in u["after"]), default=0)
    top = max(level.values(), default=0)
    return [[u for u in units if level[u["id"]] == n and not u["cached"]]
            for n in range(1, top + 1)]  # fmt: skip


def resources(gpus: int) -> list[str]:
    """The ``#SBATCH`` lines of a job on one node asking ``gpus`` GPUs. Several (training under
    ``torchrun``) hold the whole node: ``--exclusive`` gives it every CPU, ``--mem=0`` every byte
    of memory (an exclusive job gets only what it asks otherwise). One asks
    :data:`CPUS_PER_GPU` cores, none :data:`CPUS_CPU_UNIT`, each with the memory the cluster
    gives by default (no ``--mem``: it would hold a shared node's memory)."""
    if gpus > 1:
        return ["#SBATCH --nodes=1", f"#SBATCH --gres=gpu:{gpus}", "#SBATCH --exclusive",
                "#SBATCH --mem=0"]  # fmt: skip
    cpus = [f"#SBATCH --cpus-per-task={CPUS_PER_GPU if gpus else CPUS_CPU_UNIT}"]
    return ["#SBATCH --nodes=1", *([f"#SBATCH --gres=gpu:{gpus}"] if gpus else []), *cpus]


def _program(name: str, module: str) -> list[str]:
    """How a job starts console script ``name``: its path where it is on ``PATH``, else this
    Python with ``-m module``."""
    found = shutil.which(name)
    return [found] if found else [sys.executable, "-m", module]


SCRIPTS = re.compile(r"(units-\d+(-1gpu|-cpu)?\.txt|array-\d+(-1gpu|-cpu)?\.sbatch)")
"""The names of the per-level files :func:`emit_slurm` writes."""
JOB_NAME = re.compile(r"^#SBATCH --job-name=lrb-(\S+)-report$", re.MULTILINE)


def _emitted_profile(report: str) -> str | None:
    """The ``--profile`` of the ``reproduce`` call in an emitted ``report.sbatch``, unquoted."""
    for line in reversed(report.splitlines()):
        try:
            words = shlex.split(line)
        except ValueError:
            continue
        if "reproduce" in words and "--profile" in words[:-1]:
            return words[words.index("--profile") + 1]
    return None


def clear_scripts(out: Path, table: str, profile: str) -> None:
    """Before ``--emit-slurm out`` for ``table`` at ``profile`` (as :func:`profile_arg` names
    it): refuse a folder holding another table's or another profile's scripts (the record of
    what was submitted from it, and where its jobs write their logs) or files of these names no
    emit wrote (a user's own ``submit.sh``), and delete the per-level scripts of an earlier emit
    of the same table and profile (a plan of fewer levels would leave its extra levels beside
    the new ones; its queued tasks carry their own unit lists); logs and other files stay."""
    names = sorted(p.name for p in out.iterdir() if p.is_file()) if out.is_dir() else []
    ours = [n for n in names if SCRIPTS.fullmatch(n) or n in ("submit.sh", "report.sbatch")]
    if not ours:
        return
    try:
        text = (out / "report.sbatch").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""
    earlier, given = JOB_NAME.search(text), _emitted_profile(text)
    if earlier is None or given is None:
        raise UserError(f"--emit-slurm {out} holds {ours[0]}, which no --emit-slurm wrote (no "
                        "report.sbatch of one beside it): give another folder")  # fmt: skip
    was = (earlier.group(1), given)
    if was != (table, profile):
        raise UserError(f"--emit-slurm {out} holds the job scripts of {was[0]} at profile "
                        f"{was[1]}, whose jobs log to it: give {table} at {profile} another "
                        "folder")  # fmt: skip
    for name in names:
        if SCRIPTS.fullmatch(name):
            (out / name).unlink()


def _pins(model: str | None, data: str | None) -> list[str]:
    """The ``export`` lines that make every node run the model and read the data that the
    emitting process planned with (:func:`emit_slurm`'s ``pinned`` and ``data``)."""
    lines = []
    if model == "fallback":
        lines.append("export HF_HUB_OFFLINE=1  # the fallback model, as when emitted")
    if data == "fallback":  # not HF_DATASETS_OFFLINE: paper_short's datasets need the hub
        lines.append(f"export {DATA_FALLBACK}=1  # the data's offline fallbacks, as when emitted")
    hub = [what for what, pin in (("model", model), ("data", data)) if pin == "hub"]
    if hub:
        lines.append(f"export {NO_FALLBACK}=1  # the hub's {' and '.join(hub)}, as when emitted")
    return lines


def emit_slurm(ctx: Context, out: Path, report_out: Path | None, *,
               code_eval: bool = False, pinned: str | None = None,
               data: str | None = None) -> list[Path]:  # fmt: skip
    """``--emit-slurm DIR``: per dependency level ``units-N.txt`` (id and kind per line) and
    ``array-N.sbatch`` (a job array over them, the list written into the script, so that a
    queued task runs the unit it was submitted with whatever a later emit writes here),
    ``report.sbatch`` (the final ``reproduce``
    call) and ``submit.sh``, which submits them in order, each level after the one before
    (``--kill-on-invalid-dep=yes``: a failed unit cancels the jobs that wait for it).
    Where training takes several GPUs, a level's other units (evaluations, measurements: one
    process, one GPU) are an array of their own, ``units-N-1gpu.txt`` and
    ``array-N-1gpu.sbatch``, as is the report job; each job's resources are :func:`resources`.
    Every job runs with the table's options, in this directory, on this process's run cache
    (``LONGRED_CACHE``, which the units' cached or not was read from) and, where it is set, its
    ``PYTHONPATH`` (the same module search path on every node, whatever the shell that
    submits).
    ``code_eval``: the jobs run code tasks the user allowed, so they export
    ``HF_ALLOW_CODE_EVAL=1``. ``pinned``: the
    model this process planned with, where the profile states a hub model with an offline
    fallback: ``"fallback"`` (the hub could not give it) makes the jobs export
    ``HF_HUB_OFFLINE=1``, so every node runs that fallback; ``"hub"`` makes them export
    ``LONGRED_NO_FALLBACK=1``, so a node that cannot reach the hub stops in one line instead of
    training the other model (a unit's key names its model: the two would not mix, but the
    report job would compute the missing ones again). ``data``: how the units read hub data
    not cached yet (:func:`~longred_bench.reproduce.hub_data.data_pin`): ``"fallback"`` exports
    ``LONGRED_DATA_FALLBACK=1``, so every node trains on the sources' offline fallbacks (the hub
    stays open to ``paper_short``, which ``HF_DATASETS_OFFLINE`` would stop);
    ``"hub"`` exports ``LONGRED_NO_FALLBACK=1``, so a node without the hub stops in one line
    instead of training on the fallback while other units read the hub's rows."""
    units = listed(ctx)
    _refuse_unstartable(ctx, units)
    stages = levels(units)
    clear_scripts(out, ctx.table, profile_arg(ctx.profile))
    out.mkdir(parents=True, exist_ok=True)
    (out / "logs").mkdir(exist_ok=True)
    exe = _program("longred-bench", "longred_bench")
    torchrun = _program("torchrun", "torch.distributed.run")
    hw = ctx.profile.hardware
    devices = (hw.device, ctx.profile.evaluation.device)  # cuda, cuda:0, ...: a GPU's
    gpus = hw.nproc_per_node if any(str(d).startswith("cuda") for d in devices) else 0
    train = ([*torchrun, "--standalone", "--nproc-per-node", str(hw.nproc_per_node), "-m",
              "longred_bench"] if hw.nproc_per_node > 1 else exe)  # fmt: skip
    args = f"--profile {shlex.quote(profile_arg(ctx.profile))}{option_args(ctx.options)}"
    setup = [
        "set -euo pipefail",
        f"cd {shlex.quote(str(Path.cwd()))}",
        f"export {ENV_VAR}={shlex.quote(os.path.abspath(cache_dir()))}",
        *(
            [f"export PYTHONPATH={shlex.quote(tree)}  # as where this was emitted"]
            if (tree := os.environ.get("PYTHONPATH"))
            else []
        ),
        *(["export HF_ALLOW_CODE_EVAL=1"] if code_eval else []),
        *_pins(pinned, data),
    ]

    written: list[Path] = []
    submit = ["#!/usr/bin/env bash", "# Submits the table's units level by level, then its report.",
              "set -euo pipefail", f"cd {shlex.quote(str(out))}", "DEP="]  # fmt: skip
    for n, stage in enumerate(stages, 1):
        on_gpu = [u for u in stage if u["device"] != "cpu" or not gpus]
        groups = [("", on_gpu, gpus)]
        if gpus > 1:  # one GPU for what is not training
            groups = [("", [u for u in on_gpu if u["kind"] == "train"], gpus),
                      ("-1gpu", [u for u in on_gpu if u["kind"] != "train"], 1)]  # fmt: skip
        if gpus:  # what the profile runs on the CPU asks no GPU
            groups.append(("-cpu", [u for u in stage if u["device"] == "cpu"], 0))
        jobs = []
        for suffix, group, want in groups:
            if not group:
                continue
            listing = out / f"units-{n}{suffix}.txt"
            listing.write_text("".join(f"{u['id']}\t{u['kind']}\n" for u in group),
                               encoding="utf-8")  # fmt: skip
            script = [
                "#!/usr/bin/env bash", f"#SBATCH --job-name=lrb-{ctx.table}-{n}{suffix}",
                f"#SBATCH --array=0-{len(group) - 1}",
                f"#SBATCH --output={shlex.quote(f'{out}/logs/%x-%a.out')}",
                *resources(want), *setup,
                # the list itself, not a read of units-N.txt: SLURM keeps a copy of the script
                # at submission, so a later emit into this folder changes no queued task
                "UNITS=(", *(shlex.quote(f"{u['id']}\t{u['kind']}") for u in group), ")",
                'LINE=${UNITS[$SLURM_ARRAY_TASK_ID]}',
                'ID=${LINE%%$\'\\t\'*}; KIND=${LINE##*$\'\\t\'}',
                f'if [ "$KIND" = train ]; then RUN=({shlex.join(train)}); '
                f"else RUN=({shlex.join(exe)}); fi" if train != exe else f"RUN=({shlex.join(exe)})",
                f'"${{RUN[@]}}" reproduce {ctx.table} {args} --unit "$ID" --quiet',
            ]  # fmt: skip
            path = out / f"array-{n}{suffix}.sbatch"
            path.write_text("\n".join(script) + "\n", encoding="utf-8")
            written += [listing, path]
            jobs.append(f"$(sbatch --parsable $DEP {path.name})")
        ids = [f"J{i}" for i in range(len(jobs))]
        submit += [f"{j}={job}" for j, job in zip(ids, jobs, strict=True)]
        deps = ":".join(f"${{{j}%%;*}}" for j in ids)  # `--parsable` may add ";CLUSTER"
        submit.append(f'DEP="--dependency=afterok:{deps} --kill-on-invalid-dep=yes"')
    target = f" --out {shlex.quote(str(report_out))}" if report_out else ""
    report = ["#!/usr/bin/env bash", f"#SBATCH --job-name=lrb-{ctx.table}-report",
              f"#SBATCH --output={shlex.quote(f'{out}/logs/%x.out')}",
              # it computes the units known only at the end (evaluations): one GPU, unless
              # the profile runs every unit of the table on the CPU
              *resources(min(gpus, 1) if any(u["device"] != "cpu" for u in units) else 0),
              *setup,
              f"{shlex.join(exe)} reproduce {ctx.table} {args}{target} --quiet"]  # fmt: skip
    (out / "report.sbatch").write_text("\n".join(report) + "\n", encoding="utf-8")
    submit += ["JR=$(sbatch --parsable $DEP report.sbatch)", 'echo "$JR"']
    (out / "submit.sh").write_text("\n".join(submit) + "\n", encoding="utf-8")
    (out / "submit.sh").chmod(0o755)
    _warn_over_memory(units, hw.gpu_memory_gib)
    return [*written, out / "report.sbatch", out / "submit.sh"]


def _refuse_unstartable(ctx: Context, units: list[dict[str, Any]]) -> None:
    """Refuse, before any script is written, a table whose training units to run would stop at
    startup (:func:`~longred_bench.reproduce.startup.startup_error`, as the dry run lists them):
    each job would wait for its node and fail, and ``afterok`` would cancel every level after
    it. Checked where the dry run checks (:func:`~.costs.reads_training_code`)."""
    from longred_bench.reproduce.costs import reads_training_code
    from longred_bench.reproduce.startup import startup_errors

    if not reads_training_code(ctx.profile):
        return
    todo = {u["folder"] for u in units if u["kind"] == "train" and not u["cached"]}
    steps = {s.key: s for s in get_spec(ctx.table).steps(ctx) if s.key in todo}
    errors = startup_errors(ctx.profile, list(steps.values()))
    if errors:
        label, error = errors[0]
        raise UserError(f"{len(errors)} training unit(s) of "
                        f"{ctx.table} would stop at startup, so no job is written (e.g. "
                        f"{label}: {error}); change the profile (--dry-run lists them), then "
                        "emit again")  # fmt: skip


def _warn_over_memory(units: list[dict[str, Any]], gib: float) -> None:
    """A note on the units whose estimate exceeds the profile's memory per GPU: the dry run
    counts them, and their jobs are written all the same (the estimate is a model)."""
    over = [(u["id"], u["estimate"]["gib_per_gpu"]) for u in units if not u["cached"]
            and (u["estimate"] or {}).get("gib_per_gpu") is not None
            and u["estimate"]["gib_per_gpu"] > gib]  # fmt: skip
    if over:
        uid, need = max(over, key=lambda item: item[1])
        print(f"note: {len(over)} unit(s) are estimated over the profile's {gib:g} GiB per GPU "
              f"(at most {need:.1f} GiB: {uid}); their jobs may run out of memory: see "
              "--dry-run, and docs/training.md on fitting a run (activation checkpointing, "
              "FSDP, micro_tokens)", file=sys.stderr)  # fmt: skip
