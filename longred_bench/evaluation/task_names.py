"""Where this repository's lm-eval task registry is installed, and the names of its tasks and
groups, read from the registry's YAML files without importing lm-eval (milliseconds), for checks
made before anything loads (a profile's task lists)."""

from __future__ import annotations

import difflib
import importlib.util
import re
from functools import cache
from pathlib import Path

from longred_bench.errors import UserError

RULER_TASK_PREFIXES = ("longred_ruler_", "longred_lmeval_")
"""The lm-eval tasks the ruler suite runs at ``--lengths`` (RULER's, and lm-eval's own NIAH)."""
NIAH_TASK = "longred_niah"
"""The one lm-eval task of the niah suite."""
LMEVAL_RULER_TASKS = {"ruler": "", "ruler_vt": "vt", "ruler_cwe": "cwe", "ruler_fwe": "fwe",
                      "ruler_qa_squad": "qa_1", "ruler_qa_hotpot": "qa_2"}  # fmt: skip
"""lm-eval's own RULER group and the tasks of it not named as the suite's (its ``niah_*``
are), each with the suite's name of it (the group's: none, the suite's default tasks)."""

_DEFINES = re.compile(r"^(?:task|group): *([A-Za-z0-9_]+) *(?:#.*)?$", re.MULTILINE)


def tasks_dir() -> Path:
    """The lm-eval YAML registry: the installed ``longred_bench.tasks`` package data (the
    repository's top-level ``tasks/`` folder, mapped into the package by ``pyproject.toml``)."""
    spec = importlib.util.find_spec("longred_bench.tasks")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        path = Path(location)
        if (path / "_longred_short.yaml").is_file():
            return path
    raise UserError(
        "the lm-eval task registry (longred_bench.tasks) is not installed or incomplete "
        f"(looked in {', '.join(locations) or 'nowhere'}): reinstall longred-bench "
        "(pip install --force-reinstall longred-bench, or pip install -e . in a checkout)"
    )


@cache
def own_task_names() -> frozenset[str]:
    """Every task and group the registry defines (a top-level ``task:`` or ``group:`` name)."""
    names: set[str] = set()
    for path in tasks_dir().glob("*.yaml"):
        names.update(_DEFINES.findall(path.read_text(encoding="utf-8")))
    return frozenset(names)


def check_own_task(name: str, where: str) -> None:
    """Refuse a ``longred_`` task or group ``name`` that the registry does not define, in one
    line naming ``where`` it was given and the nearest names (lm-eval's own tasks are checked
    when the evaluation starts)."""
    if not name.startswith("longred_") or name in own_task_names():
        return
    near = difflib.get_close_matches(name, sorted(own_task_names()), n=2)
    hint = f"; did you mean {' or '.join(near)}?" if near else ""
    raise UserError(f"{where}: {name!r} is none of the suite's lm-eval tasks{hint}")


def by_family(names: list[str], least: int = 4) -> list[str]:
    """Task ``names`` in their order, with the members of a listed group that has at least
    ``least`` (``longred_ruler_cwe``, ... of ``longred_ruler``) as one item after it,
    ``longred_ruler_* (14)``: a line listing every RULER task ran to 900 characters."""
    families = {n: [m for m in names if m.startswith(n + "_")] for n in names}
    families = {n: kids for n, kids in families.items() if len(kids) >= least}
    hidden = {m for kids in families.values() for m in kids}
    shown = []
    for name in names:
        if name in families:
            shown += [name, f"{name}_* ({len(families[name])})"]
        elif name not in hidden:
            shown.append(name)
    return shown


def check_short_task(task: str, where: str) -> None:
    """Refuse a long-context task given as a short suite's task (``where``: the flag or key and
    the task, leading the line). The suite's RULER and NIAH tasks are built at one default
    length there (no lengths): they failed after the model loaded, advising ``--max-length``.
    lm-eval's own RULER (``niah_single_1``, ``ruler_vt``, its ``ruler`` group) failed after the
    model loaded too, with a traceback from reading a tokenizer from the hub by the model's
    name."""
    from longred_bench.taskdata.ruler.registry import TASKS

    ours = LMEVAL_RULER_TASKS.get(task, task if task in TASKS else None)
    if ours is not None:  # lm-eval's names, or RULER's own (vt, qa_1), which lm-eval lacks
        whose = "lm-eval's" if task in LMEVAL_RULER_TASKS or task.startswith("niah_") else "a"
        to = f"task longred_ruler_{ours}" if ours else "its default tasks"
        raise UserError(f"{where} is {whose} RULER task, built at lengths, not a short one: "
                        f"run the suite's RULER with the ruler suite ({to})")  # fmt: skip
    if task.startswith(RULER_TASK_PREFIXES) or task in (NIAH_TASK, "longred_ruler"):
        suite = "niah" if task == NIAH_TASK else "ruler"
        raise UserError(f"{where} is a long-context task, built at --lengths, not a short one: "
                        f"run it with the {suite} suite")  # fmt: skip
