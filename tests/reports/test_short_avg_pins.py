"""``paper_short`` members as the tables read them: each category's tasks in name order, and a
member's score brought to a fraction by its ``headline_scale`` (SQuAD v2 reports percentages)."""

from __future__ import annotations

import pytest

from longred_bench.reports.short_avg import paper_categories, paper_scores


def _member(task: str, category: str, value: float, **extra: float) -> dict:
    return {"kind": "eval", "suite": "paper_short", "task": task, "category": category,
            "metric": "acc,none", "headline": "acc,none", "value": value, **extra}  # fmt: skip


def test_a_categorys_tasks_are_in_name_order() -> None:
    records = [_member("piqa", "Common", 0.7), _member("arc_easy", "Common", 0.6),
               _member("hellaswag", "Common", 0.5), _member("mmlu", "General", 0.4)]  # fmt: skip
    cats = paper_categories(records)
    assert cats == {"Common": ("arc_easy", "hellaswag", "piqa"), "General": ("mmlu",)}
    assert list(cats) == ["Common", "General"]  # categories in order of first appearance


def test_a_members_score_is_brought_to_a_fraction_by_its_scale() -> None:
    records = [_member("squadv2", "RC", 64.0, headline_scale=0.01), _member("piqa", "Common", 0.7)]
    scores = paper_scores(records)
    assert scores["squadv2"] == pytest.approx(0.64)
    assert scores["piqa"] == pytest.approx(0.7)  # no scale: as recorded
