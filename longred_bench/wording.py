"""Counts in words for messages and reports: ``1 window``, ``2 windows``, ``3 processes``."""

from __future__ import annotations


def counted(n: int, word: str) -> str:
    """``n`` and ``word`` (a noun), plural unless ``n`` is 1: ``1 unit``, ``2 processes``."""
    if n == 1:
        return f"1 {word}"
    return f"{n} {word}{'es' if word.endswith(('s', 'sh', 'ch', 'x')) else 's'}"
