"""A training table's RULER lengths against the tasks it scores, in the profile's words.

Every RULER task's first sample needs some tokens with the model's tokenizer (its prompt with
an empty haystack plus the answer); ``eval`` refuses a shortest length below that when the unit
runs (:class:`~longred_bench.evaluation.harness.RulerTooShort`). A table refuses it before any
unit runs, with the same line, where the tokenizer reads without loading a model, building one
or asking the hub (:func:`tokenizer_at_hand`); the smallest length that holds the tasks is found
as ``longred-bench models`` finds it (:func:`~longred_bench.jobs.limits.ruler_from`). Where the
run itself stops on it, the error names the profile's keys (:func:`profile_words`), not
``eval``'s flags.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from longred_bench.errors import UserError
from longred_bench.profiles.schema import Evaluation
from longred_bench.reproduce.spec import Context, refuse

_MEMO: dict[tuple[Any, ...], Any] = {}  # a process reads each tokenizer and length once


def _memo(*key: Any) -> tuple[Any, ...]:
    """``key`` in :data:`_MEMO`, with the cache and the folder a relative model path is read
    from (a tokenizer, a built model and the tasks' data are read there)."""
    from longred_bench.cache import cache_dir

    return (str(cache_dir()), os.getcwd(), *key)


def ruler_keys(ctx: Context) -> tuple[str, str] | None:
    """The profile keys of table ``ctx``'s RULER lengths and tasks (its own section's where it
    sets them); None for a table whose RULER settings are its own, not the profile's."""
    if ctx.table == "pcd":
        return "tables.pcd.lengths", "tables.pcd.ruler_tasks"
    own = getattr(ctx.settings, "evaluation", None)
    if own is None:
        return None
    ruler = own.get("ruler") or {}
    lengths, tasks = (f"tables.{ctx.table}.evaluation.ruler.{k}" if k in ruler
                      else f"evaluation.ruler.{k}" for k in ("lengths", "tasks"))  # fmt: skip
    return lengths, tasks


def extensions_key(ctx: Context) -> str:
    """The profile key of table ``ctx``'s extensions."""
    own = getattr(ctx.settings, "extensions", None) is not None
    return f"tables.{ctx.table}.extensions" if own else "runs.extensions"


def windows_of(grid: Any) -> dict[str, int]:
    """The window of each extension of run grid ``grid`` (from the profile's stated window)."""
    from longred_bench.models.rope import target_window

    return {e: target_window(e, grid.profile.model.window) for e in grid.extensions}


def none_fits(ctx: Context, windows: dict[str, int], fits: int | None, by: str = "") -> str:
    """Where some extension's window is below ``fits`` (the smallest RULER length that holds
    the table's tasks; None: none does), the sentence that says no RULER length fits it and
    what to change; else ""."""
    short = {e: w for e, w in windows.items() if fits is None or w < fits}
    if not short:
        return ""
    ext, window = min(short.items(), key=lambda kv: kv[1])
    need = "no RULER length holds them" if fits is None else \
        f"they need a RULER length of at least {fits}"  # fmt: skip
    return (
        f"no RULER length fits {ext}'s {window}-token window with these tasks ({need} with "
        f"this tokenizer{f', set by {by}' if by else ''}): give {extensions_key(ctx)} a "
        f"larger factor, or other {(ruler_keys(ctx) or ('', 'evaluation.ruler.tasks'))[1]}"
    )


def too_short(ctx: Context, exc: Exception, fits: int, windows: dict[str, int]) -> UserError:
    """The one-line error of a RULER length too short for the table's tasks (``exc``: the line
    saying so; ``fits``: the smallest length that holds them), naming the profile's keys."""
    keys = ruler_keys(ctx)
    if keys is None:
        return UserError(f"{ctx.table} at profile {ctx.profile.source or ctx.profile.name}: {exc}")
    advice = none_fits(ctx, windows, fits) or f"give {keys[0]} from that one on (e.g. " \
        f"{keys[0]}: [{fits}]), or other {keys[1]}"  # fmt: skip
    return refuse(ctx, keys[0], f"{exc}: {advice}")


@contextmanager
def profile_words(ctx: Context) -> Iterator[None]:
    """Run table ``ctx``'s units with a RULER length too short for its tasks refused in the
    profile's words (:func:`too_short`)."""
    from longred_bench.evaluation.harness import RulerTooShort

    try:
        yield
    except RulerTooShort as exc:
        from longred_bench.reproduce.registry import get_spec

        spec = get_spec(ctx.table)
        windows = windows_of(spec.grid(ctx)) if spec.grid is not None else {}
        raise too_short(ctx, exc, exc.fits, windows) from None


def tokenizer_at_hand(name: str, *, zoo: bool = False) -> Any | None:
    """Model ``name``'s tokenizer where it reads without a download, a build or a model load:
    a local folder or ``.gguf`` file; with ``zoo``, also ``tiny-random`` and a built
    ``tiny-base`` (their tokenizers import torch). None elsewhere."""
    key = _memo("tokenizer", name, zoo)
    if key in _MEMO:
        return _MEMO[key]
    from longred_bench.models.names import check_local, zoo_names

    if name in zoo_names():
        readable = zoo and name in ("tiny-random", "tiny-base")
    else:
        readable = check_local(name)  # not a hub id (the run reads that one's tokenizer)
    _MEMO[key] = None
    if readable:
        from longred_bench.jobs.limits import model_folder
        from longred_bench.models.loading import load_tokenizer  # torch

        with suppress(UserError, OSError, ValueError):  # not built, or a folder without one
            _MEMO[key] = load_tokenizer(str(model_folder(name)) if name == "tiny-base" else name)
    return _MEMO[key]


def _tasks(ev: Evaluation) -> tuple[str, ...]:
    from longred_bench.taskdata.ruler.registry import registry_tasks

    return tuple(registry_tasks(ev.ruler.tasks or ("longred_ruler",)))


def least_length(model: str, ev: Evaluation, *, zoo: bool = False) -> tuple[Any, ...] | None:
    """:func:`~longred_bench.jobs.limits.ruler_from` for ``ev``'s RULER tasks with model
    ``model``'s tokenizer (the smallest length, the task that sets it, the tasks not checked);
    None where the tokenizer is not at hand (:func:`tokenizer_at_hand`)."""
    key = _memo("least", model, _tasks(ev), ev.ruler.phrasing, zoo)
    if key not in _MEMO:
        from longred_bench.jobs.limits import ruler_from

        tokenizer = tokenizer_at_hand(model, zoo=zoo)
        _MEMO[key] = None if tokenizer is None else \
            ruler_from(tokenizer, _tasks(ev), phrasing=ev.ruler.phrasing)  # fmt: skip
    return _MEMO[key]


def check_tasks_fit(ctx: Context, grid: Any, *, zoo: bool = False) -> None:
    """Refuse run grid ``grid`` of table ``ctx`` where its shortest RULER length is too short
    for some task's first sample, in the line the run would stop with (:func:`too_short`);
    nothing where the tokenizer is not at hand (:func:`tokenizer_at_hand`)."""
    ev = grid.evaluation
    tasks, length = _tasks(ev), min(ev.ruler.lengths, default=0)
    found = least_length(grid.model, ev, zoo=zoo) if tasks and length else None
    if found is None or (found[0] is not None and found[0] <= length):
        return
    key = _memo("misfit", grid.model, tasks, length, ev.ruler.phrasing, zoo)
    if key not in _MEMO:
        from longred_bench.taskdata.ruler.registry import check_fits_all, length_holding
        from longred_bench.taskdata.ruler.sizing import Misfit

        checked = [t for t in tasks if t not in found[2]]
        try:  # the run's own check (its units' seed 0), on the tasks whose data is cached
            check_fits_all(checked, tokenizer_at_hand(grid.model, zoo=zoo), length, 0,
                           phrasing=ev.ruler.phrasing)  # fmt: skip
            _MEMO[key] = None
        except Misfit as exc:
            _MEMO[key] = (str(exc), length_holding(exc.needed))
    if _MEMO[key] is not None:
        message, fits = _MEMO[key]
        raise too_short(ctx, UserError(message), fits, windows_of(grid))


def check_table_tasks(ctx: Context) -> None:
    """:func:`check_tasks_fit` for a training table about to run, its model's tokenizer read
    where it is a zoo model too (the run loads torch)."""
    from longred_bench.reproduce.registry import get_spec

    spec = get_spec(ctx.table)
    if spec.grid is not None:
        check_tasks_fit(ctx, spec.grid(ctx), zoo=True)
