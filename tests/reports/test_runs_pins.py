"""What :mod:`longred_bench.reports.runs` puts in a table's cells: a short task scored by both
``acc`` and ``exact_match`` reads ``acc`` whichever record comes first; RULER without its
group record is the mean of its tasks at each length, and with it, that record; a cell reads its
interval low to high and the documents behind it; seeds lowest first, an extension's own
baseline first, the extension factor, training means and per-step timings; and the perplexity
is the ppl task's word perplexity; a method's table without its rows names the call to make."""

from __future__ import annotations

from typing import Any

import pytest

from longred_bench.errors import UserError
from longred_bench.metrics.stats import Interval
from longred_bench.reports.runs import (
    Cell,
    Run,
    baseline,
    collect_runs,
    extension_factor,
    mean_train,
    method_runs,
    run_steps,
    seconds_per_token,
    seeds,
    short_avg_cell,
    task_cell,
)

EXT = "pi:factor=2"
KEY = (EXT, "cpt", 0)


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


def test_a_rows_seeds_come_lowest_first_and_a_baseline_is_the_extensions_own() -> None:
    runs = {(EXT, "cpt", 2): Run(), (EXT, "cpt", 0): Run(), (None, "original", 0): Run()}
    assert seeds(runs, EXT, "cpt") == [(EXT, "cpt", 0), (EXT, "cpt", 2)]
    assert baseline(runs, EXT, "original") == [(None, "original", 0)]
    runs[(EXT, "original", 0)] = Run()
    assert baseline(runs, EXT, "original") == [(EXT, "original", 0)]


def test_the_extension_factor_is_the_widest_window_of_its_rows_but_the_control() -> None:
    runs = {
        (None, "original", 0): Run(window=256),
        (EXT, "zero-shot", 0): Run(window=512),
        (EXT, "cpt", 0): Run(window=1024),
        (EXT, "control", 0): Run(window=4096),
    }
    assert extension_factor(runs, EXT) == 4.0


def test_training_figures_are_means_over_seeds_and_cost_is_seconds_per_token() -> None:
    runs = {
        (EXT, "cpt", 0): Run(train={"seconds": 10.0, "tokens": 100.0}),
        (EXT, "cpt", 1): Run(train={"seconds": 30.0, "tokens": 300.0}),
    }
    assert mean_train(runs, EXT, "cpt", "tokens") == 200.0
    assert seconds_per_token(runs, EXT, "cpt") == 0.1


def _timed(seconds: list[float], tokens: list[float], steps: int = 4) -> Run:
    run = Run(train={"seconds": 10.0, "tokens": 400.0, "steps": steps})
    run.step_seconds, run.step_tokens = seconds, tokens
    return run


def test_run_steps_are_each_steps_own_amounts_where_the_record_covers_the_run() -> None:
    steps = run_steps(_timed([2.0, 5.0, 7.0, 10.0], [100.0, 200.0, 300.0, 400.0]))
    assert steps is not None
    assert list(steps.values) == [2.0, 3.0, 2.0, 3.0] and list(steps.weights) == [100.0] * 4
    totals = ([10.0], [400.0])
    short = run_steps(_timed([2.0, 5.0, 10.0], [100.0, 200.0, 400.0]))  # 3 of the 4 steps
    other = run_steps(_timed([2.0, 5.0, 7.0, 10.0], [100.0, 200.0, 300.0, 380.0]))
    for got in (short, other):
        assert got is not None and (list(got.values), list(got.weights)) == totals


def test_perplexity_is_the_ppl_tasks_word_perplexity() -> None:
    records = [_eval("longred_tiny_ppl", "word_perplexity", 12.5),
               _eval("longred_tiny_ppl", "bits_per_byte", 0.9)]  # fmt: skip
    assert collect_runs(records)[KEY].ppl == 12.5


def test_a_method_table_without_its_rows_says_which_run_to_make() -> None:
    original = {**_eval("longred_tiny_swap", "acc,none", 0.4), "row": "original", "extension": None}
    with pytest.raises(UserError, match="no Table 7 rows in these records: run `reproduce table7`"):
        method_runs([original], ("merge",), "Table 7", "table7")
