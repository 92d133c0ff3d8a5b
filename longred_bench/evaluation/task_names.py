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
