"""Flags a command would take and not use, refused in one line before anything loads: a
long-context flag with a suite it is not for, ``--tasks`` that the suite would run otherwise
than asked, and a PCD cut of the plausibility rule not in force. A flag that is recorded but
not used would make a result claim settings that never ran. It imports nothing heavy."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from longred_bench.errors import UserError
from longred_bench.evaluation.task_names import NIAH_TASK, RULER_TASK_PREFIXES, check_short_task

if TYPE_CHECKING:
    from longred_bench.pcd.config import PcdConfig

EVAL_FLAG_SUITES = {"--lengths": ("ruler", "niah", "ppl"), "--samples": ("ruler", "niah", "ppl"),
                    "--depths": ("niah",), "--corpus": ("ruler", "niah", "ppl")}  # fmt: skip
"""The suites each of ``eval``'s long-context flags applies to."""


def check_eval_flags(args: argparse.Namespace) -> None:
    """Refuse ``eval`` flags its suite would ignore: a long-context flag with a suite it is not
    for (:data:`EVAL_FLAG_SUITES`), ``--tasks`` or ``--num-fewshot`` with ``ppl`` (no lm-eval
    task runs), a ``--tasks`` entry of ``ruler`` that is no RULER task (it would run whole,
    without ``--lengths`` or ``--samples``), and PCD flags of the other plausibility rule
    (:func:`check_pcd_flags`)."""
    for flag, suites in EVAL_FLAG_SUITES.items():  # not ignored while the cache key moves
        if getattr(args, flag.strip("-")) is not None and args.suite not in suites:
            *others, last = suites
            which = f"{', '.join(others)} and {last} suites" if others else f"{last} suite"
            raise UserError(f"eval: {flag} is for the {which}, not {args.suite}")
    if args.allow_code_eval and args.suite != "paper_short" and not args.tasks:
        raise UserError(f"eval: --allow-code-eval is for tasks that run model-written code "
                        f"(paper_short's humaneval and mbpp, or such --tasks); the {args.suite} "
                        "suite has none")  # fmt: skip
    if args.suite == "ppl":
        given = [f for f, v in (("--tasks", args.tasks), ("--num-fewshot", args.num_fewshot))
                 if v is not None]  # fmt: skip
        if given:
            raise UserError(f"eval: {given[0]} is for the lm-eval suites; the ppl suite scores "
                            "windows of --corpus")  # fmt: skip
    if args.suite == "ruler":
        other = [t for t in args.tasks or () if not t.startswith(RULER_TASK_PREFIXES)]
        from longred_bench.taskdata.ruler.registry import TASKS

        if other and other[0] in TASKS:  # RULER's own name, without the lm-eval prefix
            raise UserError(f"eval: --tasks {other[0]}: the ruler suite's tasks are named "
                            f"longred_ruler_<name>: give longred_ruler_{other[0]}")  # fmt: skip
        if other:
            raise UserError(f"eval: {other[0]} is not a RULER task (longred_ruler_<name>, e.g. "
                            "longred_ruler_niah_single_1); run it with its own suite")  # fmt: skip
    if args.suite == "niah":
        check_long_lengths(args.lengths, "eval")
        other = [t for t in args.tasks or () if t != NIAH_TASK]
        if other:
            raise UserError(f"eval: the niah suite runs one task, {NIAH_TASK} (the needle grid "
                            f"over --lengths and --depths), not {other[0]}: run that with its "
                            "own suite")  # fmt: skip
    if args.suite not in ("ruler", "niah", "ppl"):
        check_short_tasks(args.tasks, "eval", "--tasks")
    if args.suite in ("ruler", "niah") and (args.num_fewshot or 0) > 0:
        raise UserError(f"eval: --num-fewshot above 0 is for the short suites; the "
                        f"{args.suite} suite's prompts are built at each length, with no "
                        "examples to draw")  # fmt: skip
    check_pcd_flags(args)


def check_short_tasks(tasks: list[str] | tuple[str, ...] | None, who: str, flag: str) -> None:
    """Refuse a long-context task among a short suite's ``tasks``
    (:func:`~longred_bench.evaluation.task_names.check_short_task`), naming ``flag``."""
    for task in tasks or ():
        check_short_task(task, f"{who}: {flag} {task}")


def check_long_lengths(lengths: list[int] | tuple[int, ...] | None, who: str) -> None:
    """Refuse a NIAH or PSA length above RULER's longest (131,072 tokens): nothing bounded
    them, and a typo (``--lengths 10000000``) built a haystack of that many tokens in one
    tokenizer call, past 12 GB, deaf to Ctrl-C while it ran."""
    from longred_bench.taskdata.ruler.registry import LENGTHS

    over = [n for n in lengths or () if n > LENGTHS[-1]]
    if over:
        raise UserError(f"{who}: --lengths {over[0]} is above {LENGTHS[-1]} tokens, the "
                        "longest length the suite measures (RULER's too): give lengths up to "
                        "it")  # fmt: skip


def check_window_tokens(seq_len: int | None, who: str, flag: str) -> None:
    """Refuse a drift window under two tokens (``--seq-len 1``): the run refused one only once
    the models had loaded (and ``compare`` once every other unit had been measured), naming
    no flag (and 0 as "at least 1")."""
    if seq_len is not None and seq_len < 2:
        raise UserError(f"{who}: {flag} must be at least 2 (a window of one token has no "
                        f"attention to compare), not {seq_len}")  # fmt: skip


def check_rope_none(ropes: str | list[str] | tuple[str, ...] | None, who: str) -> None:
    """Refuse ``--rope none`` where the original is measured without it (``eval`` of the model
    as it is, ``drift`` and ``compare`` against the original): it read "unknown RoPE extension
    method 'none'" (``psa`` and ``train``'s ``rope=none`` do take it)."""
    if "none" not in ([ropes] if isinstance(ropes, str) else list(ropes or ())):
        return
    if who == "eval":
        raise UserError("eval: --rope none: leave it out (eval without --rope evaluates the "
                        "model as it is)")  # fmt: skip
    raise UserError(f"{who}: --rope none: the original is always {who}'s reference, with its "
                    "own RoPE: leave none out")  # fmt: skip


def check_pcd_flags(args: argparse.Namespace) -> None:
    """Refuse a ``--pcd-*`` cut of the plausibility rule not in force: ``--pcd-top-k`` is for
    ``--pcd-plausibility topk``, ``--pcd-beta`` for ``adaptive`` (the default)."""
    rule = getattr(args, "pcd_plausibility", None) or "adaptive"
    cuts = (("--pcd-top-k", "pcd_top_k", "topk"), ("--pcd-beta", "pcd_beta", "adaptive"))
    for flag, name, needs in cuts:
        if getattr(args, name, None) is not None and rule != needs:
            raise UserError(f"{flag} is for --pcd-plausibility {needs}, not {rule}: it would be "
                            "recorded and not used")  # fmt: skip


def check_psa_depths(tasks: tuple[str, ...], depths: tuple[float, ...]) -> None:
    """Refuse ``psa --depths`` with a NIAH task of several needles (``niah_multikey_1``'s four
    keys): the config check takes every NIAH task, and the generator refuses it only at the
    first sample, after the model has loaded."""
    from longred_bench.taskdata.ruler.niah import CONFIGS

    single = [t for t, c in CONFIGS.items() if c.num_keys * c.num_values == 1]
    several = [t for t in tasks if t in CONFIGS and t not in single]
    if depths and several:
        raise UserError(f"psa: --depths are for the single-needle NIAH tasks "
                        f"({', '.join(single)}), not {several[0]}")  # fmt: skip


def pcd_settings(args: argparse.Namespace) -> PcdConfig | None:
    """The PCD settings of the ``--pcd-*`` flags given, ``None`` where none was or those given
    are the defaults: a flag repeating its default is the same run (it read as another config,
    ``eval``'s output refused and ``compare``'s units measured again)."""
    from dataclasses import replace

    from longred_bench.pcd.config import DEFAULT_LOCAL_FRACTION, PcdConfig, pcd_from_args

    given = pcd_from_args(args)
    decoding = args.decoding if isinstance(args.decoding, list | tuple) else [args.decoding]
    if "pcd" not in decoding:
        return given  # refused as given without --decoding pcd, at the default too
    if given is not None and given.local_fraction == DEFAULT_LOCAL_FRACTION:
        given = replace(given, local_fraction=None)  # the rule in force when none is given
    return None if given is None or given == PcdConfig() else given
