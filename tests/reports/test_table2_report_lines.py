"""The Table 2 report's content besides the rule: the paper's rows (Long, Long+Short and their
difference), claim (a) shown before (T2) at each extension and gating it, the paper's effect
bounding (T2) only at an ABF extension, and a task's row that has no per-document scores reads
empty, not the run's Short Avg."""

from __future__ import annotations

from typing import Any

from report_helpers import tiny_run

from longred_bench.reports.runs import Run, collect_runs
from longred_bench.reports.short_avg import short_categories
from longred_bench.reports.table2_report import SHORT_AVG, diff_lines, table2_verdicts, task_diffs
from longred_bench.reports.verdict_rules import NOT_COMPARABLE, NOT_REPRODUCED


def _records(ext: str, cpt: float = 0.4) -> list[dict[str, Any]]:
    recs = tiny_run("original", None, 0.8)
    recs += tiny_run("zero-shot", ext, 0.7, ruler=0.2)
    recs += tiny_run("cpt", ext, cpt, ruler=0.6)
    recs += tiny_run("long-short-cpt", ext, 0.6, ruler=0.6)
    return recs


def test_the_papers_rows_read_long_then_long_short_then_their_difference() -> None:
    lines = diff_lines([])
    assert "| MMLU | 62.00 | 62.50 | +0.50 |" in lines
    assert "| HumanEval | 14.02 | 16.46 | +2.44 |" in lines


def test_claim_a_comes_first_and_the_papers_effect_only_at_abf() -> None:
    for ext, at_abf in (("abf:theta=4e4", True), ("pi:factor=4", False)):
        records = _records(ext)
        verdicts = table2_verdicts(collect_runs(records), short_categories(records))
        assert [v.key for v in verdicts] == ["a", "T2"]
        no_bound = "The paper's Table 2 is at ABF: no effect of it bounds this interval."
        assert (no_bound not in verdicts[1].ours) is at_abf, ext


def test_claim_t2_is_gated_on_claim_a() -> None:
    """CPT loses nothing here (0.8 as the original): (a) is not reproduced, so (T2) has nothing
    to recover and is not comparable, however long+short CPT scores."""
    records = _records("abf:theta=4e4", cpt=0.8)
    a, t2 = table2_verdicts(collect_runs(records), short_categories(records))
    assert a.label == NOT_REPRODUCED
    assert t2.label == NOT_COMPARABLE and "(a) not reproduced" in t2.premise


def test_a_task_without_per_document_scores_has_no_values() -> None:
    """Older records hold each task's score but no documents: Short Avg has its tidy values, a
    task row has none (not the whole run's Short Avg)."""
    ext = "abf:theta=4e4"
    runs = {(None, "original", 0): Run(short={"a": 80.0, "b": 60.0})}
    runs[(ext, "cpt", 0)] = Run(short={"a": 40.0, "b": 20.0})
    runs[(ext, "long-short-cpt", 0)] = Run(short={"a": 60.0, "b": 40.0})
    diffs = {d.task: d for d in task_diffs(runs, {"General": ("a",), "RC": ("b",)})}
    assert (diffs[SHORT_AVG].long, diffs[SHORT_AVG].long_short) == (30.0, 50.0)
    assert (diffs["a"].long, diffs["a"].long_short) == (None, None)
