"""The bodies of the ``longred-bench`` subcommands: each builds its job's config from the parsed
arguments and calls the job (``longred_bench.jobs``, ``longred_bench.reproduce``); imports of
anything heavy happen inside, after parsing."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from longred_bench.cli.flags import (
    check_eval_flags,
    check_long_lengths,
    check_pcd_flags,
    check_rope_none,
    check_short_tasks,
    check_window_tokens,
    pcd_settings,
)
from longred_bench.cli.named import (
    check_corpus_name,
    check_extensions,
    check_models,
    check_pairs_file,
    check_pcd_model,
    config_if_at_hand,
    extension_applies,
    local_names,
    local_text,
    warn_past_window,
)
from longred_bench.cli.outputs import (
    check_drift_out,
    check_eval_out,
    check_out_dir,
    check_out_outside,
    check_reproduce_outside,
    results_in,
    saved_drift_order,
)
from longred_bench.errors import UserError

if TYPE_CHECKING:
    from longred_bench.evaluation.config import EvalConfig


def wrote(paths: list[Path], start: float) -> None:
    """The closing line of a command: what it wrote and its wall time."""
    from longred_bench.reports import duration

    took = duration(time.perf_counter() - start)
    print(f"wrote {', '.join(str(p) for p in paths)} in {took}")


def command_line(args: argparse.Namespace) -> str:
    """The command as typed, for reports and the line that resumes it; under ``torchrun`` as
    launched, ``torchrun ... -m longred_bench`` (it read ``longred-bench``, one process)."""
    return launcher() + " " + shlex.join(sys.argv[1:] if args.argv is None else args.argv)


def launcher() -> str:
    """``longred-bench``, or under ``torchrun`` (``WORLD_SIZE`` > 1) the launch that starts as
    many processes (``--nnodes`` where they span nodes; a multi-node launch's rendezvous flags
    are the scheduler's, not known here)."""
    world = int(os.environ.get("WORLD_SIZE", "1") or 1)
    if world <= 1:
        return "longred-bench"
    local = int(os.environ.get("LOCAL_WORLD_SIZE", str(world)) or world)
    nodes = f" --nnodes {world // local}" if world > local else ""
    return f"torchrun{nodes} --nproc-per-node {local} -m longred_bench"


def cmd_data(args: argparse.Namespace) -> int:
    from longred_bench.cache import ENV_VAR, cache_dir
    from longred_bench.jobs import data

    cache, action = getattr(args, "cache", None), args.data_command
    given = cache is not None
    flag, wrote = "--cache ", "the folder `data fetch --cache` wrote"
    if not given and os.environ.get(ENV_VAR, "").strip():  # a typo there is one here too
        cache, flag = cache_dir(), f"{ENV_VAR}="
        wrote = f"the folder `data fetch` wrote (unset {ENV_VAR} for the default cache)"
    if cache is not None and cache.is_file():
        raise UserError(f"data {action}: {flag}{cache} is a file: give the cache folder")
    reads = action == "list" or (action == "verify" and (args.sources or not args.results))
    if cache is not None and reads and not cache.is_dir():
        raise UserError(f"data {action}: {flag}{cache} does not exist: give {wrote}")
    if cache is not None and (root := data.cache_above(cache)) is not None:
        raise UserError(f"data {action}: {flag}{cache} is the {cache.name}/ folder inside the "
                        f"cache {root}: give the cache itself, {flag}{root}")  # fmt: skip
    if given and (found := results_in(cache)) is not None:  # the suite's own may hold an --out
        raise UserError(f"data {action}: {flag}{cache} holds results ({found}), not a data "
                        f"cache: give {wrote}, or check results with --results "
                        f"{cache}")  # fmt: skip
    return {"fetch": data.run_fetch, "list": data.run_list, "verify": data.run_verify}[
        args.data_command
    ](args)


def cmd_drift(args: argparse.Namespace) -> int:
    if not args.rope and not args.extended:
        raise UserError("drift needs --rope SPEC and/or --extended M: without one it would "
                        "measure the original against itself (cosine 1, KL 0)")  # fmt: skip
    check_out_dir(Path(args.out), "drift")
    check_rope_none(args.rope, "drift")
    check_window_tokens(args.seq_len, "drift", "--seq-len")
    check_out_outside(Path(args.out), args.original, *(args.extended or ()))
    check_models(args.original, *(args.extended or ()))
    from longred_bench.jobs.compare import check_listed_once
    from longred_bench.jobs.configs import DriftConfig

    cfg = DriftConfig(  # local models and text files by their absolute paths (local_names)
        original=local_names(args.original),
        extended=tuple(local_names(m) for m in args.extended or ()), rope=tuple(args.rope or ()),
        texts=local_text(args.texts), num_texts=args.num_texts, seq_len=args.seq_len,
        batch_size=args.batch_size, seed=args.seed, top_m=args.top_m, impl=args.impl,
        device=args.device, dtype=args.dtype,
    )  # fmt: skip
    check_listed_once(cfg.original, cfg.extended, cfg.rope)
    check_extensions(cfg.original, cfg.rope)
    cfg = replace(cfg, **saved_drift_order(Path(args.out), cfg.to_dict()))  # resumes in order
    check_drift_out(Path(args.out), cfg.to_dict())  # another config's results: refused
    from longred_bench.jobs.drift import PARTIAL, files_changed

    out = Path(args.out)
    if (
        all((out / n).is_file() for n in ("drift.jsonl", "config.yaml"))
        and not (out / PARTIAL).is_file()
    ):  # this config's, finished: measured again, every window, without a word
        if changed := files_changed(out, cfg):
            print(f"[drift] the files of {changed} changed since {out / 'drift.jsonl'} was "
                  "written: measured again, its results are replaced", flush=True)  # fmt: skip
        else:
            from longred_bench.reports.drift_report import write_missing_report

            wrote = write_missing_report(out, cfg.original, command_line(args))
            print(f"{out} holds this drift, measured ({out / 'drift.jsonl'}): nothing to "
                  "measure (delete drift.jsonl there to measure it again)"
                  + "".join(f"; wrote its missing {p.name}" for p in wrote))  # fmt: skip
            return 0
    warn_past_window(cfg.original, cfg.seq_len, cfg.rope, cfg.extended)
    if cfg.extended:  # before any weights load: both tokenizers, then both configs
        from longred_bench.jobs.same_tokens import check_drift_shapes, check_same_tokens

        check_same_tokens(cfg.original, cfg.extended, who="drift", role="original",
                          why="drift feeds both models the original's token ids")  # fmt: skip
        check_drift_shapes(cfg.original, cfg.extended, who="drift")
    from longred_bench.jobs.drift import drift_command

    paths = drift_command(cfg, Path(args.out), progress=not args.quiet, command=command_line(args))
    paths.append(Path(args.out) / "config.yaml")  # written beside the records
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    if args.out is None and not args.dry_run:
        raise UserError("eval: --out DIR is required (only --dry-run runs without one)")
    if args.out is not None:  # a dry run's too: it checks the command as the run would
        check_out_dir(Path(args.out), "eval")
        check_out_outside(Path(args.out), args.model)
    check_models(args.model, offline=args.dry_run)
    from longred_bench.evaluation.config import EvalConfig

    check_eval_flags(args)
    check_rope_none(args.rope, "eval")
    tasks = _eval_tasks(args)
    cfg = EvalConfig(  # a local model or text file by its absolute path (local_names)
        model=local_names(args.model), suite=args.suite, rope=args.rope, tasks=tasks,
        limit=args.limit, lengths=args.lengths, samples=args.samples,
        depths=args.depths, corpus=local_text(args.corpus), num_fewshot=args.num_fewshot,
        batch_size=args.batch_size, max_length=args.max_length, backend=args.backend,
        device=args.device, seed=args.seed, decoding=args.decoding, pcd=pcd_settings(args),
        phrasing=args.phrasing, allow_code_eval=args.allow_code_eval,
        log_samples=args.log_samples, dtype=args.dtype,
    )  # fmt: skip
    if cfg.decoding == "pcd":  # a cut the model cannot take, as the run refuses it (dry run too)
        check_pcd_model(cfg.model, (cfg.rope,), cfg.pcd)
    if args.dry_run:
        if cfg.tasks is not None and cfg.suite != "paper_short":  # a typo, as the run refuses it
            from longred_bench.evaluation.harness import check_task_names

            check_task_names(cfg.tasks)
        config = config_if_at_hand(cfg.model) if cfg.rope else None  # a zoo model's too
        if config is not None:  # an extension it refuses, refused now as the run would
            extension_applies(config, cfg.model, cfg.rope)
        check_corpus_name(cfg.corpus)  # a corpus that names none, as the run refuses it
        if args.out is not None:
            check_eval_out(Path(args.out), cfg.ran_dict())
        print(_describe_eval(cfg, args.tasks))
        return 0
    try:
        check_eval_out(Path(args.out), cfg.ran_dict())
    except UserError:  # a typo beside another run's results: the typo, not "another config"
        if cfg.tasks is not None and cfg.suite != "paper_short":
            from longred_bench.evaluation.harness import check_task_names

            check_task_names(cfg.tasks)
        check_corpus_name(cfg.corpus)
        raise
    check_corpus_name(cfg.corpus)
    check_extensions(cfg.model, [cfg.rope] if cfg.rope else [])
    from longred_bench.evaluation import paper_suite
    from longred_bench.jobs.eval import eval_command

    if cfg.suite == paper_suite.SUITE and paper_suite.runs_offline(cfg.tasks):
        print(f"[eval] {paper_suite.offline_line(args.tasks)}", flush=True)
    wrote(eval_command(cfg, Path(args.out), progress=not args.quiet, command=command_line(args)),
          start)  # fmt: skip
    return 0


def _eval_tasks(args: argparse.Namespace) -> list[str] | tuple[str, ...] | None:
    """``eval``'s tasks: ``--tasks``, or with ``--offline-members`` (``paper_short`` only) the
    offline tasks of those members that have one (one line when none has)."""
    if not args.offline_members:
        return args.tasks
    from longred_bench.evaluation import paper_suite

    if args.suite != paper_suite.SUITE:
        raise UserError(f"eval: --offline-members is for the {paper_suite.SUITE} suite, not "
                        f"{args.suite}")  # fmt: skip
    return paper_suite.offline_tasks(args.tasks)


def _describe_eval(cfg: EvalConfig, requested: list[str] | None) -> str:
    """What ``eval --dry-run`` prints; for ``paper_short`` how each of the ``requested``
    members runs here (through the hub, which is checked, offline, or not at all)."""
    from longred_bench.evaluation import paper_suite
    from longred_bench.evaluation.config import describe

    if cfg.suite == "ppl":
        return describe(cfg, [_ppl_line(cfg)])
    if cfg.suite != paper_suite.SUITE:
        return describe(cfg)
    offline = paper_suite.runs_offline(cfg.tasks)
    return describe(cfg, paper_suite.dry_run_lines(
        requested, offline=offline, allow_code_eval=cfg.allow_code_eval,
        hub_why=None if offline else paper_suite.hub_missing(),
    ))  # fmt: skip


def _ppl_line(cfg: EvalConfig) -> str:
    """What the ``ppl`` suite of ``cfg`` measures (its suite has no tasks): windows, corpus,
    lengths (by default the evaluated window rounded down to a power of two, read from the
    model's config where it is at hand) and position buckets."""
    from longred_bench.evaluation.ppl import pow2_floor, ppl_bucket

    what = f"ppl: {cfg.samples or 8} window(s) of {cfg.corpus or 'austen'} at"  # the defaults
    default = "the evaluated window rounded down to a power of two"
    lengths, why = sorted(cfg.lengths or ()), ""
    if not lengths:
        from longred_bench.models.loading import extended_config, load_config

        try:
            config = load_config(cfg.model)
            window = extended_config(config, cfg.rope) if cfg.rope else config
        except (UserError, OSError, ValueError):  # a hub model offline: the run reads it
            return f"{what} {default}"
        lengths, why = [pow2_floor(int(window.max_position_embeddings))], f" ({default})"
    buckets = ", ".join(str(ppl_bucket(n)) for n in lengths)
    return (f"{what} length(s) {', '.join(map(str, lengths))}{why}, NLL by position in buckets "
            f"of {buckets} tokens")  # fmt: skip


def cmd_compare(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    if args.pairs is not None:
        return _compare_pairs(args, start)
    if args.dry_run:
        raise UserError("compare --dry-run estimates a pairs file's runs: give --pairs FILE, "
                        "or drop --dry-run")  # fmt: skip
    if args.original is None or args.out is None:
        raise UserError("compare needs --original and --out (or --pairs FILE)")
    check_out_dir(Path(args.out), "compare")
    if (Path(args.out) / "pairs.md").is_file():  # a pairs file's report folder
        raise UserError(f"--out {args.out} holds the compares of a pairs file (pairs.md): give "
                        "compare a folder of its own")  # fmt: skip
    check_rope_none(args.rope, "compare")
    if "drift" in args.suites:  # not after every other unit is measured
        check_window_tokens(args.drift_seq_len, "compare", "--drift-seq-len")
    check_out_outside(Path(args.out), args.original, *(args.extended or ()))
    check_models(args.original, *(args.extended or ()))
    check_pcd_flags(args)
    from longred_bench.jobs.compare import decodes_nothing

    if decodes_nothing(args.decoding, args.suites):  # PCD settings never used
        raise UserError("compare: --decoding pcd decodes nothing in --suites drift (drift "
                        "reads the weights): drop --decoding and the --pcd-* flags")  # fmt: skip
    check_short_tasks(args.short_tasks, "compare", "--short-tasks")
    from longred_bench.evaluation.config import check_seed

    check_seed(args.seed)
    from longred_bench.jobs.configs import CompareConfig

    cfg = CompareConfig(
        original=args.original, extended=tuple(args.extended or ()), rope=tuple(args.rope or ()),
        suites=tuple(args.suites), short_suite=args.short_suite,
        short_tasks=tuple(args.short_tasks or ()), short_limit=args.short_limit,
        lengths=tuple(args.lengths), ruler_samples=args.ruler_samples,
        niah_depths=tuple(args.niah_depths), niah_samples=args.niah_samples,
        drift_texts=args.drift_texts, drift_num_texts=args.drift_num_texts,
        drift_seq_len=args.drift_seq_len, batch_size=args.batch_size, device=args.device,
        seed=args.seed, decoding=tuple(args.decoding), pcd=pcd_settings(args),
    )  # fmt: skip
    if "niah" in cfg.suites:  # RULER's lengths are checked as its own
        check_long_lengths(cfg.lengths, "compare")
    check_extensions(cfg.original, cfg.rope)
    if "pcd" in cfg.decoding:  # every compared model decodes with it
        check_pcd_model(cfg.original, (None, *cfg.rope), cfg.pcd)
        for model in cfg.extended:
            check_pcd_model(model, (None,), cfg.pcd)
    from longred_bench.jobs.compare import compare_command

    paths = compare_command(
        cfg, Path(args.out), command=command_line(args), progress=not args.quiet
    )
    wrote(paths, start)
    return 0


def _compare_pairs(args: argparse.Namespace, start: float) -> int:
    from longred_bench.jobs import pairs
    from longred_bench.reproduce.pair_costs import pairs_plan_with_costs

    if args.original is not None or args.extended or args.rope:
        raise UserError("--pairs takes its models from the file: drop --original, --extended "
                        "and --rope")  # fmt: skip
    from longred_bench.cli import build_parser

    own = ("pairs", "out", "dry_run", "quiet", "argv", "func")  # what --pairs itself takes
    defaults = vars(build_parser().parse_args(["compare"]))
    given = [k for k, v in vars(args).items() if k not in own and defaults.get(k, v) != v]
    if given:  # else dropped without a word: the file's settings are the run's
        flag = "--" + given[0].replace("_", "-")
        raise UserError(f"--pairs takes its settings from the file's `settings:`: drop {flag} "
                        "(or set it there)")  # fmt: skip
    if args.dry_run:
        check_pairs_file(args.pairs, here=False)
        print(pairs_plan_with_costs(args.pairs), end="")
        return 0
    if args.out is None:
        raise UserError("compare --pairs needs --out DIR (or --dry-run)")
    check_pairs_file(args.pairs, here=True)
    check_out_dir(Path(args.out), "compare")
    if (Path(args.out) / "compare.md").is_file():  # its pairs.md and folders would sit beside
        raise UserError(f"--out {args.out} holds a compare of one original (compare.md): give "
                        "--pairs a folder of its own")  # fmt: skip
    paths = pairs.compare_pairs(args.pairs, Path(args.out), command=command_line(args),
                                progress=not args.quiet)  # fmt: skip
    wrote(paths, start)
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from longred_bench.reproduce.engine import reproduce

    if args.out:  # a dry run's too: it checks the command as the run would
        check_out_dir(Path(args.out), "reproduce")
    given = {"--list-units": args.list_units, "--unit": args.unit, "--emit-slurm": args.emit_slurm}
    unit_flags = [flag for flag, value in given.items() if value]
    if args.dry_run and unit_flags:
        raise UserError(f"--dry-run prints the table's plan; {unit_flags[0]} does something "
                        "else: give one of them")  # fmt: skip
    if args.force and (args.list_units or args.emit_slurm):
        flag = "--list-units" if args.list_units else "--emit-slurm"
        raise UserError(f"--force computes units again as they run; {flag} runs none: give "
                        "--force to --unit ID or to the table's run")  # fmt: skip
    if args.out and (args.unit or args.list_units):  # it was taken and not used
        flag = "--unit" if args.unit else "--list-units"
        raise UserError(f"--out names the folder of the table's report; {flag} writes no "
                        "report (a unit's results go to the run cache): drop --out, and give it "
                        "to the table's run or --emit-slurm")  # fmt: skip
    if args.jobs is not None and unit_flags:
        raise UserError(f"--jobs runs a table's units side by side; {unit_flags[0]} runs or "
                        "lists them otherwise: drop --jobs")  # fmt: skip
    others = [
        f for f, v in {**given, "--dry-run": args.dry_run, "--force": args.force,
                       "--jobs": args.jobs is not None}.items() if v
    ]  # fmt: skip
    if args.rebuild and others:
        raise UserError(f"--rebuild writes a report from its records and computes nothing; "
                        f"{others[0]} does something else: give one of them")  # fmt: skip
    if args.emit_slurm is not None:
        if not args.emit_slurm.strip():
            raise UserError("--emit-slurm needs a folder path for the job scripts")
        check_out_dir(Path(args.emit_slurm), "reproduce --emit-slurm", "--emit-slurm")
    if args.out or args.emit_slurm:
        check_reproduce_outside(args.table, args.profile, args.out, args.emit_slurm)
    if args.allow_code_eval:  # a permission, not a setting: no cache key changes
        os.environ["HF_ALLOW_CODE_EVAL"] = "1"

    paths = reproduce(
        args.table, args.profile, Path(args.out) if args.out else None, force=args.force,
        progress=not args.quiet, jobs=1 if args.jobs is None else args.jobs, d1=args.d1,
        dry_run=args.dry_run,
        list_units=args.list_units, unit=args.unit,
        emit_slurm=None if args.emit_slurm is None else Path(args.emit_slurm).resolve(),
        rebuild=args.rebuild,
    )  # fmt: skip
    if paths:
        print("wrote " + ", ".join(str(p) for p in paths))
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    table_flags = [f for f, v in (("--model", args.model), ("--limit", args.limit),
                                  ("--suites", args.suites)) if v is not None]  # fmt: skip
    if args.path is not None and table_flags:
        raise UserError(f"models --path M prints one folder and reads no {table_flags[0]}: "
                        f"give --path alone, or drop it for the limits table")  # fmt: skip
    limit = 20 if args.limit is None else args.limit
    if limit < 1:
        raise UserError(f"--limit must be at least 1, got {limit}")
    from longred_bench.jobs.limits import ZOO_ORDER, limits_table, model_folder, model_limits

    if args.path is not None:
        print(model_folder(args.path))
        return 0

    suites = ("short_tiny", "short") if args.suites is None else tuple(args.suites)
    rows = [model_limits(m, limit=limit, suites=suites) for m in args.model or ZOO_ORDER]
    print(limits_table(rows, suites, limit))
    return 0


def cmd_profiles(args: argparse.Namespace) -> int:
    from longred_bench.reproduce import profile_views

    if args.profiles_command == "show":
        print(profile_views.show_profile(args.profile), end="")
    elif args.profiles_command == "new":
        print(f"wrote {profile_views.new_profile(args.source, Path(args.out))}")
    else:
        print(profile_views.profiles_table())
    return 0


def cmd_tasks_path(args: argparse.Namespace) -> int:
    from longred_bench.evaluation.harness import tasks_dir

    print(tasks_dir())
    return 0
