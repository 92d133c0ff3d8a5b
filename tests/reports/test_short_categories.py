"""``reports.short_avg.short_categories`` on ``short_tiny`` records: a category enters Short
Avg only when every one of its tasks ran."""

from __future__ import annotations

from longred_bench.reports.short_avg import short_categories


def _record(task: str) -> dict:
    return {"kind": "eval", "suite": "short_tiny", "task": f"longred_tiny_{task}",
            "metric": "acc,none", "n_samples": 100, "value": 0.6}  # fmt: skip


def test_a_tiny_category_with_a_task_missing_is_left_out() -> None:
    # Language is swap and replace: replace did not run, so Language is not averaged.
    records = [_record(t) for t in ("swap", "lastword", "nextsent")]
    assert short_categories(records) == {
        "General": ("longred_tiny_lastword",),
        "RC": ("longred_tiny_nextsent",),
    }
    full = short_categories([*records, _record("replace")])
    assert full["Language"] == ("longred_tiny_swap", "longred_tiny_replace")
