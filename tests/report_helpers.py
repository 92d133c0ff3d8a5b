"""Shared helpers of the report tests: the provenance hand-made records carry, and one tiny
run's records built from the scores asked of it."""

from __future__ import annotations

from typing import Any

PROV = {
    "device": "CPU test",
    "git_commit": "abc123",
    "versions": {"torch": "t", "transformers": "x"},
    "seed": 0,
    "timestamp": "2026-01-01T00:00:00+00:00",
    "config": {},
}
TINY_SHORT_TASKS = ("longred_tiny_lastword", "longred_tiny_nextsent", "longred_tiny_swap",
                    "longred_tiny_replace")  # fmt: skip
N = 40
"""Documents per short task, samples per RULER task and length, in :func:`tiny_run`."""


def ones(p: float) -> list[float]:
    """``N`` scores, the fraction ``p`` of them 1 (the first), the rest 0."""
    k = round(p * N)
    return [1.0] * k + [0.0] * (N - k)


def tiny_run(
    row: str, extension: str | None, short: float, ruler: float | None = None, *,
    seed: int = 0, train: dict | None = None, prov: dict | None = None,
    ruler_tasks: tuple[str, ...] = ("longred_ruler_vt",),
) -> list[dict[str, Any]]:  # fmt: skip
    """One run's records: every tiny short task at accuracy ``short`` (``N`` documents each);
    RULER (if given) the fraction ``ruler`` of the ``N`` samples of each of ``ruler_tasks``
    scored 100, at one length (1,024), with its group's rows."""
    common = {"row": row, "extension": extension, "seed": seed, "model": "tiny-base",
              "rope": extension, "provenance": prov or PROV, "train": train}  # fmt: skip
    window = 256 if extension is None else 1024
    out: list[dict[str, Any]] = []
    for task in TINY_SHORT_TASKS:
        base = {**common, "suite": "short_tiny", "task": task, "length": None}
        out.append({**base, "kind": "eval", "metric": "acc", "value": short, "n_samples": N,
                    "n_over_length": 0, "group": "longred_short_tiny",
                    "max_position_embeddings": window})  # fmt: skip
        out += [{**base, "kind": "eval_item", "metric": "acc", "doc_id": i, "value": v}
                for i, v in enumerate(ones(short))]  # fmt: skip
    if ruler is None:
        return out
    base = {**common, "suite": "ruler", "metric": "score", "max_position_embeddings": window}
    for length in (1024, None):
        out.append({**base, "kind": "eval", "task": "longred_ruler", "length": length,
                    "value": 100.0 * ruler, "n_samples": None})  # fmt: skip
    for t, task in enumerate(ruler_tasks):
        out += [{**base, "kind": "eval_item", "task": task, "length": 1024,
                 "doc_id": t * 1000 + i, "value": 100.0 * v}
                for i, v in enumerate(ones(ruler))]  # fmt: skip
    return out
