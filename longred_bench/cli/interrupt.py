"""The one line a command prints when Ctrl-C stops it: what it had saved and how to resume.

:func:`interrupted_line` reads what the interrupted command left on disk (request caches,
finished units, partial drift sums, checkpoints) after the fact, so the line says what is
really there. It imports no torch to read them: an interrupt while torch was being imported
(a command's first seconds) leaves torch half imported, and importing it again fails.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from longred_bench.cli.commands import command_line


def _saved(what: str | None, again: str, nothing: str) -> str:
    """``<what>; resume with ...``, or ``<nothing>; run it again ...`` when ``what`` is empty."""
    if not what:
        return f"{nothing}; run it again with: {again}"
    return f"{what}; resume with the same command: {again}"


def _eval(args: argparse.Namespace, again: str) -> str:
    if args.out is None or args.dry_run:
        return "nothing was being saved"
    from longred_bench.jobs.resume import REQUESTS, saved_responses_under

    folder = Path(args.out) / REQUESTS
    saved = saved_responses_under(folder)
    what = f"{saved} model response(s) saved under {folder}" if saved else None
    return _saved(what, again, "no model response was finished yet")


def _compare(args: argparse.Namespace, again: str) -> str:
    from longred_bench.jobs.in_progress import DRIFT_NOW
    from longred_bench.jobs.resume import REQUESTS, saved_responses_under

    if args.out is None or getattr(args, "dry_run", False):
        return "nothing was being saved"
    out, pairs = Path(args.out), getattr(args, "pairs", None)
    # a pairs file's pairs each keep their units in OUT/<pair>/runs
    roots = sorted(out.glob("*/runs")) if pairs else [out / "runs"]
    units = [p for r in roots for p in r.glob("**/config.json") if REQUESTS not in p.parts]
    saved = sum(saved_responses_under(r / REQUESTS) for r in roots)
    where = out if pairs else out / "runs"
    parts = [f"{len(units)} finished unit(s) under {where}"]
    if saved:
        parts.append(f"{saved} model response(s) of the unit in progress")
    if windows := sum(_drift_windows(p) for p in DRIFT_NOW):  # this call's, not others' beside
        parts.append(f"the drift of {windows} window(s)")
    return _saved(", ".join(parts) + " saved", again, "")


def _drift_windows(path: Path) -> int:
    from longred_bench.jobs.in_progress import partial_windows

    return partial_windows(path)


def _drift(args: argparse.Namespace, again: str) -> str:
    from longred_bench.jobs.in_progress import PARTIAL

    path = Path(args.out) / PARTIAL
    windows = _drift_windows(path)
    what = f"the drift of {windows} window(s) saved in {path}" if windows else None
    return _saved(what, again, "no window was finished yet")


def _train(args: argparse.Namespace, again: str) -> str:
    if args.out is None or args.dry_run:
        return "nothing was being saved"
    from longred_bench.jobs.in_progress import kept_checkpoint
    from longred_bench.training.anchors import IMPACT

    out = Path(args.out)
    resume = again if "--resume" in again.split() else f"{again} --resume"
    if (out / "final" / "config.json").is_file() and (out / "run.json").is_file():
        curves = "" if (out / "curves.png").is_file() else f"; draw its loss curves with: {resume}"
        return f"the run had finished: its model is in {out / 'final'}{curves}"
    latest = kept_checkpoint(out)
    if latest is None:
        kept = (f" (LongRecipe's measured anchors are kept, in {IMPACT})"
                if (out / IMPACT).is_file() else "")  # fmt: skip
        return f"no checkpoint was written yet{kept}; start again with: {again}"
    return f"checkpoint {latest} saved ({_step_of(latest, out)}); resume with: {resume}"


def _step_of(checkpoint: Path, out: Path) -> str:
    """``step 2 of 4, later steps train again``: where a checkpoint stands in its run (the
    steps after it, done or not, are not kept)."""
    import yaml

    try:
        step = int(checkpoint.name.rsplit("-", 1)[-1])
    except ValueError:
        return "later steps train again"
    from longred_bench.errors import UserError

    try:  # torch's modules, where the interrupt came while they were imported, import no more
        from longred_bench.training.config import TrainConfig
        from longred_bench.training.loop import total_steps
    except Exception:
        return f"step {step}; the steps after it train again"
    try:  # every optimizer step: LongRecipe's replay and LinearARD's CPT stage too
        saved = TrainConfig.from_dict(yaml.safe_load((out / "config.yaml").read_text()))
        steps = total_steps(saved)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, yaml.YAMLError, UserError):
        return f"step {step}; the steps after it train again"
    if step >= steps:  # stopped as it wrote its final model: that alone is left to do
        return f"step {step} of {steps}, the last; only its final model is written again"
    return f"step {step} of {steps}; the steps after it train again"


def _training_now() -> str:
    """``the training run in progress kept checkpoint ... (step N of M ...), which the
    command resumes; `` where this process was training a unit that saved one, and ``... had
    written no checkpoint yet: ...; `` for one that had not; else ``""``."""
    from longred_bench.jobs.in_progress import TRAINING_NOW, kept_checkpoint

    kept = [(run, latest) for run in TRAINING_NOW if (latest := kept_checkpoint(run))]
    fresh = [str(run) for run in TRAINING_NOW if not kept_checkpoint(run)
             and not (run / "final" / "config.json").is_file()]  # fmt: skip
    text = ""
    if len(kept) == 1:
        ((run, latest),) = kept
        text = (f"the training run in progress kept checkpoint {latest} "
                f"({_step_of(latest, run)}), which the command resumes from; ")  # fmt: skip
    elif kept:
        each = "; ".join(f"{latest} ({_step_of(latest, run)})" for run, latest in kept)
        text = (f"the training runs in progress kept checkpoints {each}, which the command "
                "resumes from; ")  # fmt: skip
    if fresh:  # said, where the rerun trained it from its first step without a word
        runs, it = ("the training run", "it") if len(fresh) == 1 else ("the training runs", "them")
        text += (f"{runs} in progress in {', '.join(fresh)} had written no checkpoint yet: "
                 f"the command trains {it} again from the first step; ")  # fmt: skip
    return text


def _unit_now(forced: bool = False) -> str:
    """``the unit in progress kept ... in WORK, which the command resumes from; `` where this
    process was measuring a run-cache unit that kept some of its work, else ``""``. Under
    ``forced`` (``--force``) a unit that has an earlier result is computed again, and no
    command resumes from its work: without ``--force`` its earlier result is taken, with it
    the unit starts again; the line says so instead."""
    from longred_bench.jobs.in_progress import UNIT_NOW

    if not UNIT_NOW:  # before importing what the unit imported (torch): nothing to say
        return ""
    from longred_bench.jobs.in_progress import PARTIAL
    from longred_bench.jobs.saved_responses import REQUESTS, saved_responses
    from longred_bench.jobs.units import RECORDS_FILE

    kept, redone = [], []
    for work in UNIT_NOW:
        responses, windows = saved_responses(work / REQUESTS), _drift_windows(work / PARTIAL)
        what = (f"{responses} model response(s)" if responses
                else f"the drift of {windows} window(s)" if windows else None)  # fmt: skip
        unit = work.parent.parent  # the unit's folder: work is its partial/<config hash>/
        earlier = forced and any((unit / f).is_file() for f in set(RECORDS_FILE.values()))
        if what is not None:
            (redone if earlier else kept).append(f"{what} in {work}")
    text = ""
    if kept:
        units = "the unit in progress" if len(kept) == 1 else "the units in progress"
        text += f"{units} kept {'; '.join(kept)}, which the command resumes from; "
    if redone:
        units = "the unit" if len(redone) == 1 else "the units"
        text += (f"{units} computed again kept {'; '.join(redone)}, which no command resumes "
                 "from (without --force the earlier result is taken and that work removed, with "
                 "it the unit starts again); ")  # fmt: skip
    return text


def _reproduce(args: argparse.Namespace, again: str) -> str:
    from longred_bench.cache import cache_dir

    if any(getattr(args, flag, False) for flag in ("dry_run", "list_units", "rebuild")):
        return "nothing was being saved"  # no unit runs: a plan, a list, a report
    forced = bool(getattr(args, "force", False))
    now = _training_now() + _unit_now(forced)
    runs = cache_dir() / "runs"  # the folder itself: "$LONGRED_CACHE" named no place
    if forced:  # the same command would compute them all again
        forced = [w for w in again.split(" ") if len(w) > 3 and "--force".startswith(w)]  # --forc
        plain = " ".join(w for w in again.split(" ") if w not in forced)
        return (
            f"{now}every unit finished before the interrupt is kept in the run cache "
            f"({runs}); reuse them with: {plain} (without --force, the units this "
            "call did not reach are taken from the cache as they were; with it, every unit is "
            "computed again)"
        )
    return (
        f"{now}every finished unit is kept in the run cache ({runs}); run the same command "
        f"again to reuse them: {again}"
    )


def _data(args: argparse.Namespace, again: str) -> str:
    if getattr(args, "data_command", None) != "fetch":
        return "nothing was being saved"
    return (
        "sources fetched before the interrupt are cached (a source is swapped in whole or not "
        f"at all); fetch the rest with: {again}"
    )


def _psa(args: argparse.Namespace, again: str) -> str:
    """psa measures in memory and writes its records, then its report: stopped before the
    records, nothing of this call is kept; stopped after them (the report missing: psa removes
    an earlier one first), the same command writes the report from them."""
    if args.out is None:
        return "nothing was being saved"
    out = Path(args.out)
    records = out / "psa.jsonl"
    if (
        records.is_file()
        and records.stat().st_size
        and not all((out / name).is_file() for name in ("psa.md", "psa.png"))
    ):
        return (f"the records are saved in {records}, the report not yet written; the same "
                f"command writes it from them, measuring nothing again: {again}")  # fmt: skip
    kept = " (an earlier run's results there are kept as they were)" if records.is_file() else ""
    return (f"psa keeps its measurements in memory until the end: nothing of this call saved"
            f"{kept}; run it again: {again}")  # fmt: skip


NOTES = {
    "eval": _eval, "compare": _compare, "drift": _drift, "train": _train,
    "reproduce": _reproduce, "data": _data, "psa": _psa,
}  # fmt: skip


def interrupted_line(args: argparse.Namespace) -> str:
    """``interrupted: <what was saved>; <how to resume>`` for the command of ``args``."""
    note = NOTES.get(args.command)
    again = command_line(args)
    try:
        text = note(args, again) if note else "nothing was being saved"
    except Exception as exc:  # the line must come out whatever is on disk
        text = f"could not read what was saved ({type(exc).__name__}); run again with: {again}"
    return f"interrupted: {text}"
