"""``longred-bench models``: what each model can run, found by the same code the runs use.

For each model: its window (``max_position_embeddings``); the RULER lengths at which the first
sample of every RULER task can be generated with its tokenizer (the smallest is set by the task
whose prompt and answer alone are longest); the smallest NIAH-grid length (a power of two) that
leaves room for a haystack; and, for each short suite, whether every task has a document among
its first ``limit`` whose requests fit the window (the check ``eval`` makes before running,
:func:`longred_bench.evaluation.harness.suite_fits`), else the window that would hold one of
each. A zoo model that is not fetched or built is listed with the command that provides it;
data that is not cached is named the same way. Nothing is evaluated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from longred_bench.errors import UserError

ZOO_ORDER = ("tiny-random", "tiny-base", "smollm2-135m")
SHORT_SUITES = ("short_tiny", "short")
GENERATION_BUDGET = 128  # the RULER tasks' largest max_gen_toks: a length L runs in L + 128


@dataclass
class Limits:
    """What one model can run (see the module docstring); ``missing`` says why it was not
    checked."""

    name: str
    window: int | None = None
    ruler: str = ""
    niah: str = ""
    suites: dict[str, str] = field(default_factory=dict)
    missing: str = ""


def _lengths() -> tuple[int, ...]:
    from longred_bench.taskdata.ruler.registry import LENGTHS

    return LENGTHS


def _span(first: int | None, window: int) -> str:
    """``"1024-131072 (1024-3968... within the window)"``: the RULER lengths from ``first``."""
    lengths = _lengths()
    if first is None:
        return f"none up to {lengths[-1]}"
    inside = [n for n in lengths if first <= n and n + GENERATION_BUDGET <= window]
    within = "-".join(str(n) for n in dict.fromkeys(inside[:1] + inside[-1:])) or "none"
    return f"{first}-{lengths[-1]} ({within} within the {window}-token window)"


def ruler_from(
    tokenizer: Any, tasks: Sequence[str] | None = None, *, phrasing: str = "standard"
) -> tuple[int | None, str, list[str]]:
    """The smallest RULER length at which the first sample of every task (of ``tasks``, None:
    all; the NIAH and vt tasks in ``phrasing``) can be generated, the task that sets it, and
    the tasks not checked (their data is not cached)."""
    from longred_bench.taskdata.ruler.registry import PHRASED_TASKS, TASKS, generate
    from longred_bench.taskdata.ruler.sizing import Misfit

    first, by, unchecked = _lengths()[0], "", []
    for task in TASKS if tasks is None else tasks:
        own = phrasing if task in PHRASED_TASKS else "standard"
        while True:
            try:
                generate(task, tokenizer, first, 1, 0, phrasing=own)
                break
            except Misfit:
                if first == _lengths()[-1]:
                    return None, task, unchecked
                first, by = first * 2, task
            except UserError:  # a corpus or benchmark file that is not cached
                unchecked.append(task)
                break
    return first, by, unchecked


def niah_from(tokenizer: Any) -> int | None:
    """The smallest power-of-two length at which a NIAH-grid sample has room for a haystack."""
    from longred_bench.taskdata.niah_grid import generate_cell

    for length in _lengths():
        try:
            generate_cell(tokenizer, length, 50, 1, 0)
            return length
        except UserError as exc:
            if "haystack" not in str(exc) and "needs at least" not in str(exc):
                raise
    return None


def suite_line(model: str, suite: str, limit: int) -> str:
    """Whether ``suite`` runs on ``model`` at its own window (first ``limit`` documents)."""
    from longred_bench.evaluation.config import EvalConfig
    from longred_bench.evaluation.harness import suite_fits

    window, fits = suite_fits(EvalConfig(model=model, suite=suite, limit=limit), limit=limit)
    empty = [f for f in fits if not f.fitting]
    if not empty:
        return "runs"
    each = ", ".join(f"{f.task} needs {f.shortest}" for f in empty)
    need = max(f.shortest for f in empty)
    return f"does not run in {window} tokens ({each}; eval --max-length {need} would)"


def tiny_base_built() -> bool:
    """Whether this cache holds the zoo's tiny-base (its build's final model)."""
    from longred_bench.jobs.tiny_base import tiny_base_run_dir

    return (tiny_base_run_dir() / "final" / "config.json").is_file()


def _available(name: str) -> str:
    """Why zoo model ``name`` cannot be checked yet ("" when it can)."""
    if name == "tiny-base" and not tiny_base_built():
        return (
            "not built yet: built on first use (about 15 min), or `longred-bench train "
            "--recipe pretrain --profile tiny`"
        )
    if name == "smollm2-135m":
        from longred_bench.data.fetch import list_cached

        if "smollm2" not in {e.source for e in list_cached()}:
            return "not fetched: `longred-bench data fetch --sources smollm2`"
    return ""


def model_folder(name: str) -> Path:
    """The Hugging Face folder of model ``name``: a zoo model's in the cache (fetched or built
    already), or a folder given as it is."""
    missing = _available(name)
    if missing:
        raise UserError(f"{name} is {missing}")
    if name == "tiny-random":
        raise UserError(
            "tiny-random is built in-process and has no folder; smollm2-135m has one "
            "(`longred-bench data fetch --sources smollm2`)"
        )
    if name == "smollm2-135m":
        from longred_bench.data.corpora import model_dir

        return model_dir(name)
    if name == "tiny-base":
        from longred_bench.jobs.tiny_base import tiny_base_run_dir

        return tiny_base_run_dir() / "final"
    path = Path(name)
    if not (path / "config.json").is_file():
        raise UserError(f"{name} is not a zoo name or a Hugging Face folder (no config.json)")
    return path.resolve()


def model_limits(name: str, *, limit: int, suites: tuple[str, ...]) -> Limits:
    """The :class:`Limits` of model ``name`` (a zoo name, HF folder, ``.gguf`` or hub id)."""
    missing = _available(name)
    if missing:
        return Limits(name, missing=missing)
    from longred_bench.models.loading import load_config, load_tokenizer

    window = int(load_config(name).max_position_embeddings)
    tokenizer = load_tokenizer(name)
    out = Limits(name, window)
    for part, check in (("ruler", ruler_from), ("niah", niah_from)):
        try:
            found = check(tokenizer)
        except UserError as exc:
            setattr(out, part, f"not checked: {exc}")
            continue
        if part == "ruler":
            first, by, unchecked = found
            out.ruler = _span(first, window) + (f"; set by {by}" if by else "")
            if unchecked:
                out.ruler += f"; not checked (data not cached): {', '.join(unchecked)}"
        else:
            out.niah = f"{found} and up" if found else "none"
    for suite in suites:
        try:
            out.suites[suite] = suite_line(name, suite, limit)
        except UserError as exc:
            out.suites[suite] = f"not checked: {exc}"
    return out


def limits_table(rows: list[Limits], suites: tuple[str, ...], limit: int) -> str:
    """The Markdown table ``longred-bench models`` prints."""
    head = ["model", "window", "RULER --lengths", "NIAH --lengths", *suites]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if r.missing:
            lines.append(f"| {r.name} | {r.missing} |" + " |" * (len(head) - 2))
            continue
        cells = [r.name, str(r.window), r.ruler, r.niah, *(r.suites[s] for s in suites)]
        lines.append("| " + " | ".join(cells) + " |")
    note = (f"RULER: lengths at which the first sample of every task fits (a length L runs in "
            f"L + {GENERATION_BUDGET} tokens).")  # fmt: skip
    if suites:  # no word on short suites where none was checked (`--suites` alone)
        note += (f" Short suites: whether every task has a document among its first {limit} "
                 "that fits the model's window, as `eval` checks before running.")  # fmt: skip
    return "\n".join([*lines, "", note])
