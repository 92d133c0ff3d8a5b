"""``eval.md``'s tables as a reader sees them: lengths as columns in numeric order (512 before
1,024), "(all lengths)" only where there are lengths, one separator cell per column, a task's
document count from its whole-task record and its over-length count the largest of its records,
a value of exactly a million with an exponent, the NIAH grid with depths as rows and lengths
as columns, and a short task run on its own beside grouped ones is one more category of the
Short Avg table, not a plain mean."""

from __future__ import annotations

from typing import Any

from longred_bench.reports.eval_report import _niah_lines, metrics_table, suite_short_lines


def _eval(task: str, metric: str, value: float, length: int | None = None, n: int | None = 4,
          over: int = 0) -> dict[str, Any]:  # fmt: skip
    return {"kind": "eval", "task": task, "metric": metric, "value": value, "length": length,
            "stderr": None, "n_samples": n, "n_over_length": over}  # fmt: skip


def test_lengths_are_columns_in_numeric_order() -> None:
    records = [
        _eval("longred_ruler_vt", "score", 20.0, n=8, over=1),
        _eval("longred_ruler_vt", "score", 10.0, 1024, n=4, over=3),
        _eval("longred_ruler_vt", "score", 30.0, 512, n=4, over=0),
    ]
    lines = metrics_table(records)
    assert (
        lines[0]
        == "| task | score (all lengths) | score at 512 | score at 1024 | n | over-length |"
    )
    assert lines[1] == "|---|---:|---:|---:|---:|---:|"
    # n: the whole task's 8 documents; over-length: the most any of its records skipped
    assert lines[2] == "| longred_ruler_vt | 20.0000 | 30.0000 | 10.0000 | 8 | 3 |"


def test_a_suite_without_lengths_has_plain_metric_columns() -> None:
    lines = metrics_table([_eval("swap", "score", 0.5), _eval("swap", "acc", 1e6)])
    assert lines[0] == "| task | score | acc | n | over-length |"
    assert lines[1] == "|---|---:|---:|---:|---:|"
    assert lines[2] == "| swap | 0.5000 | 1e+06 | 4 | 0 |"


def test_the_niah_grid_has_depths_as_rows_and_lengths_as_columns() -> None:
    cells = [{"depth": d, "length": n, "score": float(d + n // 256)}
             for d in (0, 50) for n in (256, 1024)]  # fmt: skip
    cells.append({"depth": 100, "length": 256, "score": 7.0})  # one cell not measured at 1,024
    assert _niah_lines(cells) == [
        "| depth % | 256 | 1024 |",
        "|---:|---:|---:|",
        "| 0 | 1.0 | 4.0 |",
        "| 50 | 51.0 | 54.0 |",
        "| 100 | 7.0 |  |",
    ]


def test_a_task_run_on_its_own_beside_groups_is_one_more_category() -> None:
    def leaf(task: str, value: float, group: str | None) -> dict[str, Any]:
        return {**_eval(task, "acc", value, n=2), "suite": "short", "group": group}

    records = [leaf("longred_arc_easy", 0.5, "longred_common"),
               leaf("longred_boolq", 1.0, None)]  # fmt: skip
    lines = suite_short_lines(records)
    assert lines[2:] == [
        "| (no group) | longred_boolq | 100.00 |",
        "| common | longred_arc_easy | 50.00 |",
        "| Short Avg (2 categories) | | 75.00 |",
    ]
