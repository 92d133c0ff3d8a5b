"""Choosing PCD's settings on a dev split: the mean dev RULER score of each grid setting, from
the ``eval_item`` records of ``reproduce pcd``'s dev units, and the rule that picks one.

Shared by :mod:`longred_bench.reproduce.pcd` (which runs the test units at the chosen setting) and
:mod:`longred_bench.reports.pcd_report` (which shows the grid and recomputes the choice from the
records).
"""

from __future__ import annotations

from typing import Any

from longred_bench.errors import UserError
from longred_bench.pcd.config import PcdConfig


def dev_scores(records: list[dict[str, Any]]) -> dict[tuple[float, float | None], float]:
    """Mean dev RULER score (0-100) per ``(alpha, local_fraction)`` over every dev line, task,
    length and sample (``eval_item`` records of part ``dev``; greedy is ``(0.0, None)``)."""
    sums: dict[tuple[float, float | None], list[float]] = {}
    for r in records:
        if r.get("part") == "dev" and r.get("kind") == "eval_item" and r["metric"] == "score":
            key = (float(r["alpha"]), r.get("local_fraction"))
            sums.setdefault(key, []).append(float(r["value"]))
    return {k: sum(v) / len(v) for k, v in sums.items()}


def choose(records: list[dict[str, Any]], grid: list[PcdConfig]) -> PcdConfig:
    """The grid setting with the highest mean dev RULER score (:func:`dev_scores`); ties go to
    the smaller ``alpha``, then the smaller fraction. ``alpha = 0`` is not a candidate."""
    scores = dev_scores(records)
    scored = [c for c in grid if (c.alpha, c.local_fraction) in scores]
    if not scored:
        raise UserError("pcd: no dev scores to choose PCD's settings from (dev units missing)")
    return min(scored, key=lambda c: (-scores[(c.alpha, c.local_fraction)], c.alpha,
                                      c.local_fraction))  # fmt: skip
