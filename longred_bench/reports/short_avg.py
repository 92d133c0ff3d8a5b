"""LongReD's Short Avg as every report computes it: which short tasks count, in which category,
and the mean of the category means.

A short task's score is its headline metric (:data:`HEADLINE`: ``acc``, else ``exact_match``).
The categories of the ``short`` suite are the groups its tasks ran in (LongReD's General, Common,
RC); those of the ``short_tiny`` suite are :data:`TINY_CATEGORIES`: its ``ppl`` task is a
perplexity and its passkey (:data:`PASSKEY_TASK`) is retrieval inside the window, so both are
reported on their own and never averaged. The ``paper_short`` suite (:data:`PAPER_SUITE`,
LongReD's 17 stock lm-eval benchmarks) names each member's category (General, Code, Math, RC,
Common) and headline metric in its records (:func:`paper_categories`, :func:`paper_scores`).
``Short Avg`` is the mean over categories of the mean score of their tasks (:func:`short_avg`);
``compare``, ``eval`` and every table report use these functions.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from longred_bench.metrics.retention import category_means, short_average

HEADLINE = ("acc", "exact_match")
SHORT_SUITES = ("short", "short_tiny")
TINY_CATEGORIES: dict[str, tuple[str, ...]] = {
    "Language": ("longred_tiny_swap", "longred_tiny_replace"),
    "General": ("longred_tiny_lastword",),
    "RC": ("longred_tiny_nextsent",),
}
# Retrieval inside the window: shown on its own, never in Short Avg.
PASSKEY_TASK = "longred_tiny_passkey"
PAPER_SUITE = "paper_short"


def _paper_headlines(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``paper_short`` records that hold a member's score (its ``headline`` metric)."""
    return [
        r
        for r in records
        if r.get("kind") == "eval"
        and r.get("suite") == PAPER_SUITE
        and r.get("category")
        and r["metric"] == r.get("headline")
        and r.get("value") is not None
    ]


def paper_categories(records: list[dict[str, Any]]) -> dict[str, tuple[str, ...]]:
    """``{category: (task, ...)}`` of the ``paper_short`` members scored in ``records``, in
    the order the categories first appear (empty without such records)."""
    out: dict[str, set[str]] = {}
    for r in _paper_headlines(records):
        out.setdefault(r["category"], set()).add(r["task"])
    return {c: tuple(sorted(ts)) for c, ts in out.items()}


def paper_scores(records: list[dict[str, Any]]) -> dict[str, float]:
    """``{task: score}`` of the ``paper_short`` members: the headline metric's value brought to
    a fraction (``headline_scale``: SQuAD v2 reports percentages)."""
    return {
        r["task"]: float(r["value"]) * float(r.get("headline_scale", 1.0))
        for r in _paper_headlines(records)
    }


NO_GROUP = "(no group)"
"""The category of short tasks that ran on their own, not through a group."""


def categories(records: list[dict[str, Any]]) -> dict[str, list[str]]:
    """``{group: [tasks]}``: each short-suite task (a leaf: it has ``n_samples``) under the group
    it ran in; tasks run on their own (not through a group) form one group, ``(no group)``."""
    out: dict[str, set[str]] = defaultdict(set)
    for r in records:
        in_short = r.get("kind") == "eval" and r.get("suite") in SHORT_SUITES
        if in_short and r.get("n_samples") is not None:
            out[r.get("group") or NO_GROUP].add(r["task"])
    return {group: sorted(tasks) for group, tasks in sorted(out.items())}


def short_categories(records: list[dict[str, Any]]) -> dict[str, tuple[str, ...]]:
    """The categories Short Avg averages: the members' own for ``paper_short``
    (:func:`paper_categories`), :data:`TINY_CATEGORIES` (those whose tasks all ran) for
    ``short_tiny``, else the groups the tasks ran in (``longred_`` prefix dropped); tasks
    without a headline metric (perplexity only) and the passkey are in none."""
    paper = paper_categories(records)
    if paper:
        return paper
    scored = {
        r["task"]
        for r in records
        if r.get("kind") == "eval"
        and r.get("suite") in SHORT_SUITES
        and r.get("n_samples") is not None
        and r["metric"].split(",")[0] in HEADLINE
    }
    tiny = {t for members in TINY_CATEGORIES.values() for t in members} | {PASSKEY_TASK}
    if scored and scored <= tiny:
        return {c: m for c, m in TINY_CATEGORIES.items() if set(m) <= scored}
    eval_records = [r for r in records if r.get("kind") == "eval"]
    found = {g: tuple(t for t in ts if t in scored) for g, ts in categories(eval_records).items()}
    return {g.removeprefix("longred_"): ts for g, ts in found.items() if ts}


def short_avg(scores: Mapping[str, float], cats: Mapping[str, Sequence[str]]) -> float:
    """Short Avg of one model: the mean over ``cats`` of the mean of their tasks' ``scores``
    (a category none of whose tasks was scored is left out; NaN when none is left)."""
    means = category_means(scores, cats)
    return short_average(means) if means else math.nan
