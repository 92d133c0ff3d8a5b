"""The body of ``longred-bench train``: its overrides, the profile file and every value checked
before anything is written or loaded, then the run (or its plan, ``--dry-run``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from longred_bench.cli.named import check_models
from longred_bench.cli.outputs import check_out_dir, check_out_outside, check_train_out
from longred_bench.errors import EMPTY_MODEL_SPEC, UserError, reject_unknown_keys


def set_overrides(items: list[str]) -> dict[str, Any]:
    """``train``'s ``--set KEY=VALUE`` overrides, a value that is not YAML (``steps=[1``), a
    key given twice (the last one won without a word) and the keys the command's own flags set
    (``recipe``, ``profile``: they were overwritten without a word) refused in one line naming
    the item."""
    import yaml

    from longred_bench.training.config import TrainConfig
    from longred_bench.training.overrides import parse_set

    seen: dict[str, str] = {}
    for item in items:
        try:
            parsed = parse_set([item])
        except yaml.YAMLError as exc:
            why = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise UserError(f"--set {item!r}: VALUE is not YAML ({why}); quote the whole item "
                            "in the shell and write lists as [a, b]") from None  # fmt: skip
        for key in {"recipe", "profile"} & set(parsed):
            raise UserError(f"--set {item!r}: give the {key} with --{key}, not --set")
        key = item.partition("=")[0].strip()  # a group's setting by its whole name
        if key in seen:
            raise UserError(f"--set {item!r}: {key} is already set by {seen[key]!r}; give "
                            "each key once")  # fmt: skip
        seen[key] = item
    overrides = parse_set(items)
    plain = {k: v for k, v in overrides.items() if not isinstance(v, dict)}  # not a group's
    reject_unknown_keys(TrainConfig, plain, "training", hidden=frozenset({"recipe", "profile"}))
    return overrides


def default_profile(config: str | None) -> str:
    """``train``'s profile where ``--profile`` is not given: the built-in one a ``--config``
    file names (a run's saved ``config.yaml`` names its own), else ``tiny``; a file naming a
    profile of the user's is refused in one line asking for its file (it was refused as
    disagreeing with ``tiny``, a profile the user never named)."""
    import yaml

    from longred_bench.profiles import BUILTIN

    try:
        named = yaml.safe_load(Path(config).read_text()).get("profile") if config else None
    except (OSError, yaml.YAMLError, AttributeError):
        return "tiny"  # the config's own checks say what is wrong with it
    if named is None or named in BUILTIN:
        return named or "tiny"
    raise UserError(f"train: --config {config} is of profile {named!r}, not a built-in one: "
                    "give its file with --profile FILE")  # fmt: skip


def cmd_train(args: argparse.Namespace) -> int:
    if args.profile is None:
        args.profile = default_profile(args.config)
    if args.out is None and not args.dry_run:
        if args.recipe == "pretrain" and args.profile == "tiny" and not (args.config or args.set):
            from longred_bench.jobs.tiny_base import tiny_base_dir

            print(f"tiny-base: {tiny_base_dir(progress=not args.quiet)}")  # the zoo's, cached
            return 0
        raise UserError("train: --out DIR is required (only --dry-run, and `--recipe pretrain "
                        "--profile tiny`, which builds the zoo's tiny-base in the cache, run "
                        "without one)")  # fmt: skip
    if not args.dry_run:
        check_out_dir(Path(args.out), "train")
        check_train_out(Path(args.out))
    from longred_bench.cli.train_values import (
        absolute_models,
        check_train_device,
        check_train_sources,
        check_train_teacher,
        check_train_values,
    )
    from longred_bench.training.config import resolve_config

    check_profile_file(args.profile)
    config_file = Path(args.config) if args.config else None
    overrides = set_overrides(args.set or [])
    check_train_sources(args.recipe, args.profile, config_file, overrides,
                        Path(args.out) if args.out else None)  # fmt: skip
    cfg = resolve_config(args.recipe, profile=args.profile, config_file=config_file,
                         overrides=overrides)  # fmt: skip
    for key in ("model", "teacher", "init", "merge_with"):  # "" would read as this folder
        if isinstance(getattr(cfg, key), str) and not getattr(cfg, key).strip():
            raise UserError(f"train: {key}: {EMPTY_MODEL_SPEC}")
    cfg = absolute_models(cfg)  # the saved config names its models from any folder
    if not args.dry_run:
        check_out_outside(Path(args.out), cfg.model, cfg.teacher, cfg.init, cfg.merge_with)
    check_train_device(cfg.device, dry_run=args.dry_run)
    check_train_values(cfg)
    models = [] if cfg.recipe == "pretrain" else [cfg.model]  # pretrain builds its own
    check_models(*models, offline=args.dry_run)
    for key in ("teacher", "init", "merge_with"):  # a dry run's too, each named by its key
        if getattr(cfg, key):
            try:
                check_models(getattr(cfg, key), offline=args.dry_run)
            except UserError as exc:
                raise UserError(f"train: {key}: {exc}") from None
    check_train_teacher(cfg.recipe, cfg.teacher)  # imports torch: after the names
    from longred_bench.data.corpus_spec import DATA_KEYS, check_local_paths

    for key in DATA_KEYS:  # a missing local file fails here, not after the model loads
        if isinstance(getattr(cfg, key, None), str):
            check_local_paths(getattr(cfg, key))
    if args.dry_run:
        from longred_bench.jobs.same_tokens import check_training_shapes
        from longred_bench.jobs.tiny_base import plan_tokenizer
        from longred_bench.models.choice import choose_model
        from longred_bench.profiles import load_profile
        from longred_bench.training.data_plan import describe_plan_with_data

        model = choose_model(load_profile(args.profile)).model  # its window is stated
        window = model.window if cfg.model == model.name else None
        check_training_shapes(cfg.to_dict())  # the configs alone: nothing built or loaded
        check_init_at_hand(cfg)  # after the shapes, as the run checks them
        print(describe_plan_with_data(cfg, window, plan_tokenizer(cfg)))
        from longred_bench.reproduce.plan import tiny_base_build

        if cfg.recipe != "pretrain":  # pretrain builds its model (it said tiny-base came first)
            for line in tiny_base_build(cfg.model, "the run's model"):
                print(line)
        return 0
    from longred_bench.jobs.same_tokens import check_training_models

    check_run_folder(cfg, Path(args.out), resume=args.resume)  # before a model is fetched or built
    check_training_models(cfg.to_dict())  # teacher, init, merge_with: before any weights load
    check_init_at_hand(cfg)
    from longred_bench.jobs.train import train_command

    out = Path(args.out)
    from longred_bench.training.loop import is_finished

    done = args.resume and is_finished(out)
    if not done:
        check_run_files(cfg, out, resume=args.resume)
    final = train_command(cfg, out, resume=args.resume, progress=not args.quiet)
    if final is not None and not done:
        print(f"wrote {final}")
    elif final is not None and args.quiet:  # else the run said so: it wrote nothing
        print(f"{out} holds this run finished ({final}): nothing to resume")
    return 0


def check_run_folder(cfg: Any, out: Path, *, resume: bool) -> None:
    """Refuse an ``out`` holding a run of another config (or, without ``--resume``, this run)
    as the run itself would, from the folder's files alone: the comparison of the teacher's,
    ``init``'s or ``merge_with``'s tokenizer and config with the model's that follows fetches or
    builds a zoo model not yet in the cache (tiny-base: 15 minutes) before the one-line
    refusal. A merge's folder is checked as the merge checks it."""
    from longred_bench.training.loop import check_run_dir
    from longred_bench.training.methods import METHODS

    if METHODS[cfg.recipe].TRAINS:
        check_run_dir(cfg, out, resume)
    else:
        from longred_bench.training.merge import check_out

        check_out(cfg, out)


def check_init_at_hand(cfg: Any) -> None:
    """Refuse an ``init`` that is not ``model`` at the run's RoPE from the two configs, where
    both are at hand (a local folder, the suite's models): the run refused it once the three
    models had loaded, and a dry run passed it."""
    if not cfg.init:
        return
    from longred_bench.cli.named import config_if_at_hand
    from longred_bench.training.build import check_init

    student, model = config_if_at_hand(cfg.init), config_if_at_hand(cfg.model)
    if student is not None and model is not None:
        check_init(cfg, student, model)


def check_profile_file(profile: str) -> None:
    """A profile file given to ``train``, checked whole as ``reproduce`` and ``profiles show``
    check it (``train`` read its ``training`` section alone: a bad extension, a table of no
    name, a depth the model lacks passed), and the window and depth of a model whose config is
    at hand (a local folder, the suite's models) against the file's ``model``."""
    from longred_bench.profiles import BUILTIN

    if profile in BUILTIN:
        return
    from longred_bench.reproduce.model_check import check_model, config_at_hand
    from longred_bench.reproduce.profile_views import checked_profile

    prof = checked_profile(profile)
    if config_at_hand(prof.model.name):
        check_model(prof)


RUN_FILES = "local_files.json"
"""Beside a ``train --out`` run: the stamp (names, sizes, modification times) of each local model
and data file it reads, as it was when the run started."""


def check_run_files(cfg: Any, out: Path, *, resume: bool) -> None:
    """Refuse to resume a run in ``out`` whose local models or data files (:data:`RUN_FILES`)
    changed since it started (weights saved again at the same path: its checkpoints would
    continue from other weights, without a word); else keep their stamps there. The folder is
    checked before it (:func:`check_run_folder`), so a refused run writes nothing."""
    import json

    from longred_bench.cache import atomic_write_text
    from longred_bench.jobs.local_files import local_stamps
    from longred_bench.training.methods import METHODS

    if not METHODS[cfg.recipe].TRAINS:  # a merge: no checkpoint to continue, its own checks
        return
    now = local_stamps(cfg.to_dict()).get("local_files", {})
    path = out / RUN_FILES
    if resume and path.is_file():
        try:
            saved = json.loads(path.read_text())
        except (OSError, ValueError):
            saved = {}
        changed = sorted(n for n, stamp in saved.items() if n in now and now[n] != stamp)
        if changed:
            raise UserError(f"train: {', '.join(changed)} changed since the run in {out} started "
                            "(its files' sizes or times): its checkpoints would continue from "
                            "the old files; put them back, or use a new --out")  # fmt: skip
    if now:
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(now, indent=2, sort_keys=True))
