"""The run sections every training table shares: the original row's empty retention cell, the
seed table of a row trained with two seeds, and the budget check, which leaves merges out."""

from __future__ import annotations

from longred_bench.reports.run_sections import results_table, seed_table, training_lines
from longred_bench.reports.runs import Run

CATS = {"reading": ("task",)}
EXT = "pi:factor=2"


def _run(score: float, train: dict | None = None) -> Run:
    return Run(short={"task": score}, short_n={"task": 10}, train=train)


def test_the_original_row_has_no_retention_of_its_own() -> None:
    """Retention is a row's Short Avg over the original's: the original's own cell is empty,
    not 1.00, and an extended row's is its ratio."""
    runs = {(None, "original", 0): _run(40.0), (EXT, "cpt", 0): _run(30.0)}
    lines, summary = results_table(runs, CATS)
    assert summary[(None, "original", 0)]["retention"].value is None
    assert summary[(EXT, "cpt", 0)]["retention"].value == 0.75
    original = lines[2].split(" | ")
    assert original[:2] == ["| -", "original"] and original[5] == ""


def test_a_row_of_two_seeds_has_its_spread_shown() -> None:
    runs = {(EXT, "cpt", 0): _run(30.0), (EXT, "cpt", 1): _run(34.5), (EXT, "mix-cpt", 0): _run(1)}
    lines = seed_table(runs, CATS)
    rows = [line for line in lines if line.startswith(f"| `{EXT}`")]
    assert len(rows) == 1 and "| 0, 1 | 30.00, 34.50 | 4.50 |" in rows[0]


def test_a_merge_is_listed_but_left_out_of_the_budget_check() -> None:
    """A merge (0 steps) trains nothing: its line is in the table, the budget sentence speaks
    of the trained runs alone, and a note says the merges were left out."""
    trained = {"steps": 100, "tokens": 1000, "seconds": 5.0}
    runs = {(EXT, "cpt", 0): _run(30.0, trained), (EXT, "longred-c", 0): _run(31.0, trained),
            (EXT, "merge", 0): _run(32.0, {"steps": 0, "tokens": 0})}  # fmt: skip
    text = "\n".join(training_lines(runs))
    assert "| 0 | 0 |  |" in text  # the merge's line
    assert "Every trained row used the same budget: 100 steps and 1000 tokens" in text
    assert "Rows of 0 steps (merges) train nothing: they are left out of that check." in text
    without = "\n".join(training_lines({k: v for k, v in runs.items() if k[1] != "merge"}))
    assert "left out of that check" not in without


def test_a_budget_line_under_ten_seconds_keeps_two_figures() -> None:
    """A smoke run's 0.43 s read "0" in the Training budget table."""
    trained = {"steps": 2, "tokens": 64, "seconds": 0.43}
    text = "\n".join(training_lines({(EXT, "cpt", 0): _run(30.0, trained)}))
    assert "| 2 | 64 | 0.43 |" in text
