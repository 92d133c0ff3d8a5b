"""Counts and lists in words for messages and reports: ``1 window``, ``2 windows``,
``longred_ruler_* (14)``."""

from __future__ import annotations


def counted(n: int, word: str) -> str:
    """``n`` and ``word`` (a noun), plural unless ``n`` is 1: ``1 unit``, ``2 processes``."""
    if n == 1:
        return f"1 {word}"
    return f"{n} {word}{'es' if word.endswith(('s', 'sh', 'ch', 'x')) else 's'}"


def by_family(names: list[str], least: int = 4) -> list[str]:
    """``names`` in their order, with the members of a listed name that has at least ``least``
    (``longred_ruler_cwe``, ... of ``longred_ruler``) as one item after it, ``longred_ruler_*
    (14)``: a line listing every RULER task ran to 900 characters."""
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
