"""The PCD report's rules in the shared labels: RULER, both decodings below the RULER floor ->
not comparable; else the paired interval of PCD - greedy decides; short tasks, the interval
against the no-harm margin; no document scored by both, or one a task -> not comparable."""

from __future__ import annotations

import pytest

from longred_bench.metrics.stats import Interval
from longred_bench.reports.pcd_report import (
    SHORT_MARGIN,
    multiplicity_line,
    pcd_verdicts,
    ruler_verdict,
    short_table,
)
from longred_bench.reports.verdict_rules import (
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    REPRODUCED,
    UNDECIDED,
)
from longred_bench.reports.verdict_stats import shared_means
from longred_bench.reports.verdicts import RULER_FLOOR


def _ci(low: float, high: float) -> Interval:
    return Interval(estimate=(low + high) / 2, low=low, high=high)


@pytest.mark.parametrize(
    ("ci", "greedy", "pcd", "label"),
    [
        (_ci(0.2, 1.7), 0.3, 1.1, NOT_COMPARABLE),  # a clear gain, but both below the floor
        (
            _ci(0.2, 1.7),
            4.0,
            RULER_FLOOR,
            REPRODUCED,
        ),  # one side at the floor: the interval decides
        (_ci(-3.0, -0.5), 20.0, 18.0, NOT_REPRODUCED),
        (_ci(-1.0, 2.0), 20.0, 20.5, UNDECIDED),
        (_ci(0.0, 0.0), 0.0, 0.0, NOT_COMPARABLE),
    ],
)
def test_floor_first_then_the_interval(ci, greedy, pcd, label) -> None:
    got, text = ruler_verdict(ci, 64, greedy, pcd)
    assert got == label
    assert "n=64 samples" in text
    assert ("below the floor" in text) == (label == NOT_COMPARABLE)


def test_shared_means_are_means_of_means_on_the_shared_documents() -> None:
    a = {"a": {512: {0: 10.0, 1: 20.0, 2: 90.0}}, "b": {1024: {0: 60.0}}}
    b = {"a": {512: {0: 0.0, 1: 0.0}}, "b": {1024: {0: 30.0, 5: 99.0}}}
    assert shared_means(a, b) == (pytest.approx((15.0 + 60.0) / 2), pytest.approx(15.0))
    assert shared_means(a, {"c": {512: {0: 1.0}}}) == (None, None)


def test_the_floor_reads_the_means_the_interval_compares() -> None:
    """Task vt: greedy scores 90 samples at 0; PCD 9 of them at 10 and 90 others at 0. Task qa:
    both score the same 10 at 40. On the shared samples the means are 20 and 25 (over the
    floor) and PCD gains 5 on every draw; plain means over each side's own samples (4.0 and
    4.5) would call both floored."""
    recs = [_item("greedy", i, 0.0) for i in range(90)]
    recs += [_item("pcd", i, 10.0) for i in range(9)] + [_item("pcd", 200 + i, 0.0)
                                                          for i in range(90)]  # fmt: skip
    recs += [
        {**_item(d, 100 + i, 40.0), "task": "qa"} for d in ("greedy", "pcd") for i in range(10)
    ]
    [(label, text)] = [(v[2], v[3]) for v in pcd_verdicts(recs, top_k=10) if v[0] == "ruler"]
    assert label == REPRODUCED and "+5.00 [+5.00, +5.00]" in text, text


def _item(decoding: str, doc: int, value: float, part: str = "ruler") -> dict:
    return {"kind": "eval_item", "part": part, "line": "x", "decoding": decoding,
            "metric": "score" if part == "ruler" else "acc", "task": "vt",
            "length": 4096 if part == "ruler" else None, "doc_id": doc,
            "value": value}  # fmt: skip


def _labels(recs: list[dict], claim: str) -> list[str]:
    return [v[2] for v in pcd_verdicts(recs, top_k=10) if v[0] == claim]


def test_pcd_verdicts_apply_the_floor_to_a_line_at_zero() -> None:
    recs = [_item(d, i, 0.0) for d in ("greedy", "pcd") for i in range(8)]
    [(line, label)] = [(v[1], v[2]) for v in pcd_verdicts(recs, top_k=10) if v[0] == "ruler"]
    assert (line, label) == ("x, all lengths", NOT_COMPARABLE)
    recs = [_item("greedy", i, 0.0) for i in range(8)] + [_item("pcd", i, 100.0) for i in range(8)]
    assert _labels(recs, "ruler") == [REPRODUCED]
    # Documents scored by one decoding only: nothing to pair.
    recs = [_item("greedy", i, 50.0) for i in range(8)] + [_item("pcd", 8 + i, 50.0)
                                                           for i in range(8)]  # fmt: skip
    assert _labels(recs, "ruler") == [NOT_COMPARABLE]


def test_short_tasks_are_judged_against_the_no_harm_margin() -> None:
    assert SHORT_MARGIN == 1.0

    def short(pcd: list[float], greedy: float = 1.0) -> list[dict]:
        first = [_item("greedy", i, greedy if i % 2 else 1.0, "short") for i in range(len(pcd))]
        return first + [_item("pcd", i, v, "short") for i, v in enumerate(pcd)]

    assert _labels(short([1.0] * 40), "short") == [REPRODUCED]  # no loss on any document
    assert _labels(short([0.0] * 40), "short") == [NOT_REPRODUCED]  # 100 points lost
    # Each decoding right on half the documents, not the same half: 0 +-30 points.
    assert _labels(short([0.0, 1.0] * 20, greedy=0.0), "short") == [UNDECIDED]
    lone = [_item("greedy", 0, 1.0, "short"), _item("pcd", 1, 1.0, "short")]
    assert _labels(lone, "short") == [NOT_COMPARABLE]


def test_one_document_a_task_gives_no_interval() -> None:
    """One shared document in each of two tasks: every bootstrap draw is the estimate, a
    zero-width interval that read "reproduced" from two documents."""
    recs = [_item("greedy", 0, 0.0, "short"), _item("pcd", 0, 1.0, "short")]
    recs += [{**_item(d, 0, 1.0, "short"), "task": "qa"} for d in ("greedy", "pcd")]
    recs += [_item("greedy", 0, 0.0), _item("pcd", 0, 100.0)]
    got = {v[0]: (v[2], v[3]) for v in pcd_verdicts(recs, top_k=10)}
    assert got["short"] == (NOT_COMPARABLE, "2 paired per-document score(s), one per task (and "
                            "length) and seed: nothing to resample, no interval")  # fmt: skip
    assert got["ruler"][0] == NOT_COMPARABLE and got["ruler"][1].startswith("1 paired per-sample")
    recs.append(_item("greedy", 1, 0.0, "short"))  # a second shared document in task vt
    recs.append(_item("pcd", 1, 1.0, "short"))
    assert _labels(recs, "short") == [REPRODUCED]


def test_the_short_table_shows_the_mean_of_task_means_the_rule_compares() -> None:
    """Task vt: 3 documents at 100; task qa: 1 at 0. Each task counts once (the rule's
    statistic): 50.0, not the pooled 75.0 of the 4 documents."""
    recs = [_item(d, i, 1.0, part="short") for d in ("greedy", "pcd") for i in range(3)]
    recs += [{**_item(d, 0, 0.0, part="short"), "task": "qa"} for d in ("greedy", "pcd")]
    rows = short_table(recs)
    assert "| x | 50.0 | 50.0 |" in rows
    assert any("not LongReD's Short Avg" in r for r in rows)


def test_the_multiplicity_line_counts_the_tests_of_each_claim() -> None:
    recs = [_item(d, i, 50.0 + (d == "pcd")) for d in ("greedy", "pcd") for i in range(8)]
    recs += [_item(d, i, 1.0, part="short") for d in ("greedy", "pcd") for i in range(3)]
    line = multiplicity_line(pcd_verdicts(recs, top_k=10))
    assert line.startswith("2 of the 2 verdicts above compared intervals at 95% (1 for RULER, "
                           "1 for short tasks; a PSA verdict")  # fmt: skip
    floored = [_item(d, i, 0.0) for d in ("greedy", "pcd") for i in range(8)]  # under the floor
    line = multiplicity_line(pcd_verdicts(floored, top_k=10))
    assert line.startswith("0 of the ") and "compared intervals at 95% (none;" in line
