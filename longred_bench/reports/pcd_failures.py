"""The table of ``pcd.md`` that shows test RULER samples greedy decoding scored higher than PCD:
each one's reference and both outputs from a little before their first difference."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

FAILURES_SHOWN = 5


def _in_order(ident: tuple) -> list[tuple[bool, Any]]:
    """A sort key of a sample's identity: numbers in numeric order (length 512 before 1024,
    sample 5 before 11; as text they were not), before text, text in its own order."""
    return [(not isinstance(v, int | float), v if isinstance(v, int | float) else str(v))
            for v in ident]  # fmt: skip


def first_difference(a: str, b: str) -> int:
    """Index of the first character where ``a`` and ``b`` differ (the shorter length if one is
    a prefix of the other)."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                min(len(a), len(b)))  # fmt: skip


def _snippet(text: str, at: int) -> str:
    head = text[max(0, at - 24) : at]
    tail = text[at : at + 24]
    return f"`{head}⟦{tail}⟧`".replace("\n", "⏎")


def failures(records: list[dict[str, Any]], k: int = FAILURES_SHOWN) -> list[str]:
    """Markdown rows for up to ``k`` test RULER samples that greedy decoding scored higher than
    PCD: the reference, and both outputs from a little before their first difference (the
    differing part in ⟦ ⟧)."""
    key = ("line", "task", "length", "doc_id")
    by: dict[tuple, dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in records:
        if r.get("part") == "ruler" and r.get("kind") == "eval_item" and "response" in r:
            by[tuple(r[x] for x in key)][r["decoding"]] = r
    rows = []
    for ident, pair in sorted(by.items(), key=lambda kv: _in_order(kv[0])):
        g, p = pair.get("greedy"), pair.get("pcd")
        if g is None or p is None or not g["value"] > p["value"]:
            continue
        at = first_difference(g["response"] or "", p["response"] or "")
        target = g.get("target")
        target = ", ".join(target) if isinstance(target, list) else str(target)
        rows.append(
            f"| {ident[0]} | {ident[1].removeprefix('longred_ruler_')} | {ident[2]} | "
            f"{ident[3]} | {target} | {g['value']:.0f} / {p['value']:.0f} | {at} | "
            f"{_snippet(g['response'] or '', at)} | {_snippet(p['response'] or '', at)} |"
        )
        if len(rows) == k:
            break
    if not rows:
        return ["No test sample that greedy decoding scored higher than PCD."]
    head = ["| line | task | length | sample | answer | score greedy / PCD | first difference "
            "at | greedy | PCD |", "|---|---|---:|---:|---|---|---:|---|---|"]  # fmt: skip
    return [*head, *rows]
