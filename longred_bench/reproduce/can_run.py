"""Whether this machine can compute a table's units before any of them runs: those that
evaluate or train on CUDA need a GPU here, and ``paper_short`` evaluations the hub (and, for its
code tasks, the user's leave), and training units their own startup checks pass
(:mod:`longred_bench.reproduce.startup`); each refused in one line naming what is missing."""

from __future__ import annotations

from longred_bench.errors import UserError
from longred_bench.profiles.schema import Profile
from longred_bench.reproduce.spec import Step

PAPER_SHORT = "paper_short"  # LongReD's 17 benchmarks (evaluation/paper_suite.py): the hub


def needed(step: Step, force: bool) -> bool:
    """Whether ``step``'s unit is computed by this call: not cached, or an evaluation forced."""
    return step.unit.cached() is None or (force and step.unit.kind != "train")


def check_can_run(
    profile: Profile, steps: list[Step], force: bool = False, table: str = "all"
) -> None:
    """Units of ``steps`` to compute (not yet cached; with ``force`` every evaluation too) that
    evaluate or train on CUDA (or train on several processes) fail at once, in one line,
    without a GPU; ``paper_short`` evaluations without the hub, or with code tasks the
    environment does not allow. A training unit trains on CUDA where the profile says
    ``hardware.device: cuda``, or ``auto`` in a profile that evaluates on CUDA (a GPU profile:
    ``auto`` would otherwise train a GPU plan on the CPU, for days). ``table``: what the call
    names (a table or ``all``), whose plan the error points to."""
    todo = [s for s in steps if needed(s, force)]
    wants = {str(s.unit.config.get("device")) for s in todo}
    wants |= {str((s.unit.config.get("psa") or {}).get("device")) for s in todo}
    trains = any(s.unit.kind == "train" for s in todo)
    several = profile.hardware.nproc_per_node > 1 and trains
    device = str(profile.hardware.device)
    from longred_bench.reproduce.costs import auto_on_cuda

    gpu_training = trains and (
        device.startswith("cuda") or (device == "auto" and auto_on_cuda(profile))
    )
    if any(w.startswith("cuda") for w in wants) or several or gpu_training:
        _check_cuda(profile, table)
    paper = paper_short_steps(todo)
    if paper:  # code tasks allowed, the hub reachable: before any unit runs
        from longred_bench.evaluation.paper_suite import check_units

        check_units(pending_tasks(paper), f"profile {profile.name}")


def check_startup(profile: Profile, steps: list[Step], table: str) -> None:
    """Refuse a run before any unit is computed where a training unit of ``steps`` (those it
    would compute) would stop at startup: it stopped there after every unit before it, hours
    on a GPU, with no word of which unit or where to change it. ``table``: what the call names
    (a table or ``all``)."""
    from longred_bench.reproduce.cluster import profile_arg
    from longred_bench.reproduce.startup import startup_errors

    errors = startup_errors(profile, steps)
    if errors:
        label, error = errors[0]
        raise UserError(
            f"{len(errors)} training unit(s) of {table} would stop at startup, so nothing is "
            f"run (e.g. {label}: {error}); change the profile {profile_arg(profile)} "
            "(training.<recipe> or runs.overrides), then run again"
        )


def paper_short_steps(steps: list[Step]) -> list[Step]:
    """The ``paper_short`` evaluation units among ``steps``."""
    return [s for s in steps if s.unit.config.get("suite") == PAPER_SHORT]


def pending_tasks(steps: list[Step]) -> list[str] | None:
    """The union of the tasks the ``paper_short`` units of ``steps`` evaluate, in first-seen
    order; ``None`` (every member) when any of them names no tasks."""
    names: list[str] = []
    for step in steps:
        tasks = step.unit.config.get("tasks")
        if not tasks:
            return None
        names += [t for t in tasks if t not in names]
    return names


def _check_cuda(profile: Profile, table: str) -> None:
    import torch

    from longred_bench.reproduce.cluster import profile_arg

    if not torch.cuda.is_available():
        raise UserError(
            f"profile {profile.name} runs on CUDA GPUs and none is visible here: "
            f"`longred-bench reproduce {table} --profile {profile_arg(profile)} --dry-run` "
            "prints its plan; to run it on this machine's CPU, a profile file that extends it "
            "sets hardware.device: cpu and evaluation.device: cpu"
        )
