"""The RULER claim's rule in the PCD reports: both decodings below the RULER floor -> not
comparable at this scale; else the paired interval of PCD - greedy decides."""

from __future__ import annotations

import pytest

from longred_bench.metrics.stats import Interval
from longred_bench.reports.pcd_report import pcd_verdicts, ruler_verdict
from longred_bench.reports.verdict_stats import flat_mean
from longred_bench.reports.verdicts import NOT_COMPARABLE, RULER_FLOOR


def _ci(low: float, high: float) -> Interval:
    return Interval(estimate=(low + high) / 2, low=low, high=high)


@pytest.mark.parametrize(
    ("ci", "greedy", "pcd", "label"),
    [
        (_ci(0.2, 1.7), 0.3, 1.1, NOT_COMPARABLE),  # a clear gain, but both below the floor
        (_ci(0.2, 1.7), 4.0, RULER_FLOOR, "holds"),  # one side at the floor: the interval decides
        (_ci(-3.0, -0.5), 20.0, 18.0, "does not hold"),
        (_ci(-1.0, 2.0), 20.0, 20.5, "undecided"),
        (_ci(0.0, 0.0), 0.0, 0.0, NOT_COMPARABLE),
    ],
)
def test_floor_first_then_the_interval(ci, greedy, pcd, label) -> None:
    got, text = ruler_verdict(ci, 64, greedy, pcd)
    assert got == label
    assert "n=64 samples" in text
    assert ("below the floor" in text) == (label == NOT_COMPARABLE)


def test_flat_mean_is_flat_over_tasks_lengths_and_documents() -> None:
    assert flat_mean({"a": {512: {0: 10.0, 1: 20.0}}, "b": {1024: {0: 60.0}}}) == 30.0
    assert flat_mean({}) is None


def _item(decoding: str, doc: int, value: float) -> dict:
    return {"kind": "eval_item", "part": "ruler", "line": "x", "decoding": decoding,
            "metric": "score", "task": "vt", "length": 4096, "doc_id": doc,
            "value": value}  # fmt: skip


def test_pcd_verdicts_apply_the_floor_to_a_line_at_zero() -> None:
    recs = [_item(d, i, 0.0) for d in ("greedy", "pcd") for i in range(8)]
    [(line, label)] = [(v[1], v[2]) for v in pcd_verdicts(recs, top_k=10) if v[0] == "ruler"]
    assert (line, label) == ("x, all lengths", NOT_COMPARABLE)
    recs = [_item("greedy", i, 0.0) for i in range(8)] + [_item("pcd", i, 100.0) for i in range(8)]
    assert [v[2] for v in pcd_verdicts(recs, top_k=10) if v[0] == "ruler"] == ["holds"]
