"""What :mod:`longred_bench.reports.runs` puts in a table's cells: a short task scored by both
``acc`` and ``exact_match`` reads ``acc`` whichever record comes first; RULER without its
group record is the mean of its tasks at each length, and with it, that record; a cell reads its
interval low to high and the documents behind it."""

from __future__ import annotations

from typing import Any

from longred_bench.metrics.stats import Interval
from longred_bench.reports.runs import Cell, Run, collect_runs, short_avg_cell, task_cell

KEY = ("pi:factor=2", "cpt", 0)


def _eval(task: str, metric: str, value: float, **extra: Any) -> dict[str, Any]:
    return {"kind": "eval", "suite": "short_tiny", "row": KEY[1], "extension": KEY[0],
            "seed": KEY[2], "task": task, "metric": metric, "value": value, "n_samples": 10,
            **extra}  # fmt: skip


def test_acc_is_the_headline_whichever_record_comes_first() -> None:
    acc = _eval("longred_tiny_swap", "acc,none", 0.4)
    exact = _eval("longred_tiny_swap", "exact_match,none", 0.9)
    for records in ([acc, exact], [exact, acc]):
        assert collect_runs(records)[KEY].short == {"longred_tiny_swap": 40.0}


def _ruler(task: str, length: int | None, value: float) -> dict[str, Any]:
    return {**_eval(task, "score", value, length=length), "suite": "ruler"}


def test_without_a_group_record_ruler_is_the_mean_of_its_tasks_per_length() -> None:
    records = [_ruler("ruler_vt", 1024, 80.0), _ruler("ruler_niah", 1024, 40.0),
               _ruler("ruler_vt", 2048, 30.0), _ruler("ruler_niah", 2048, 10.0)]  # fmt: skip
    assert collect_runs(records)[KEY].ruler == {1024: 60.0, 2048: 20.0}


def test_the_group_record_is_ruler_where_there_is_one() -> None:
    """lm-eval's own group score, not the equal-weight mean of the task records beside it."""
    records = [_ruler("longred_ruler", 1024, 70.0), _ruler("longred_ruler", None, 70.0),
               _ruler("ruler_vt", 1024, 80.0), _ruler("ruler_niah", 1024, 40.0)]  # fmt: skip
    assert collect_runs(records)[KEY].ruler == {1024: 70.0, None: 70.0}


def test_a_cell_reads_value_interval_low_to_high_and_its_documents() -> None:
    assert Cell(50.0, Interval(50.0, 40.0, 60.0), 10).text() == "50.0 [40.0, 60.0] n=10"


def test_a_task_cell_counts_the_documents_scored() -> None:
    """``n`` is the number of per-document scores behind the interval, not the tidy count."""
    run = Run(short={"t": 50.0}, short_n={"t": 10}, short_items={"t": {0: 100.0, 1: 0.0}})
    assert task_cell(run, "t").text().endswith(" n=2")


def test_short_avg_without_every_items_counts_the_documents_of_every_task() -> None:
    run = Run(short={"a": 40.0, "b": 60.0}, short_n={"a": 10, "b": 12})
    assert short_avg_cell(run, {"cat": ("a", "b")}).text() == "50.0 n=22"
