"""``longred_bench.reports.short_avg`` at its edges: a group's aggregate row (it has no
``n_samples``) is neither a task of :func:`categories` nor a scored task that turns a
``short_tiny`` run away from its own categories; a group none of whose tasks has a headline
metric (perplexity only) is no category; a ``paper_short`` headline record without a value,
or another suite's record, is not a member; and the Short Avg of a model with no category
scored is NaN, not 0."""

from __future__ import annotations

import math

import pytest

from longred_bench.reports.short_avg import (
    TINY_CATEGORIES,
    categories,
    paper_categories,
    paper_scores,
    short_avg,
    short_categories,
)


def _eval(suite: str, task: str, metric: str, group: str | None, n: int | None = 4) -> dict:
    return {"kind": "eval", "suite": suite, "task": task, "metric": metric, "value": 0.5,
            "n_samples": n, "group": group}  # fmt: skip


def test_a_group_row_is_neither_a_task_nor_a_scored_task() -> None:
    tiny = ("swap", "replace", "lastword", "nextsent", "passkey")
    records = [_eval("short_tiny", f"longred_tiny_{t}", "acc,none", "longred_short_tiny")
               for t in tiny]  # fmt: skip
    # lm-eval's row of the group itself: an aggregate over its tasks, no n_samples.
    records.append(_eval("short_tiny", "longred_short_tiny", "acc,none", None, n=None))
    assert short_categories(records) == TINY_CATEGORIES
    assert categories(records) == {"longred_short_tiny": sorted(f"longred_tiny_{t}" for t in tiny)}


def test_a_group_without_a_headline_metric_is_no_category() -> None:
    records = [
        _eval("short", "longred_arc_easy", "acc,none", "longred_common"),
        _eval("short", "longred_wikitext", "word_perplexity,none", "longred_ppl"),
    ]
    cats = short_categories(records)
    assert cats == {"common": ("longred_arc_easy",)}
    assert short_avg({"longred_arc_easy": 0.5}, cats) == 0.5


def _paper(task: str, category: str, value: float | None) -> dict:
    return {"kind": "eval", "suite": "paper_short", "task": task, "category": category,
            "metric": "acc,none", "headline": "acc,none", "value": value}  # fmt: skip


def test_a_paper_member_without_a_value_is_not_a_member() -> None:
    records = [_paper("arc_easy", "Common", 0.5), _paper("piqa", "Common", None),
               _paper("gsm8k", "Math", 0.25)]  # fmt: skip
    records.append({**_paper("boolq", "RC", 1.0), "suite": "short"})  # another suite's record
    assert paper_categories(records) == {"Common": ("arc_easy",), "Math": ("gsm8k",)}
    assert paper_scores(records) == {"arc_easy": 0.5, "gsm8k": 0.25}
    assert short_avg(paper_scores(records), paper_categories(records)) == pytest.approx(0.375)


def test_short_avg_with_no_category_scored_is_nan() -> None:
    cats = {"General": ("a",), "RC": ("b", "c")}
    assert math.isnan(short_avg({}, cats))
    assert short_avg({"a": 0.4}, cats) == pytest.approx(0.4)  # RC not evaluated: left out
