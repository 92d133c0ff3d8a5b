"""Table 10 as a reader checks it: each row's mean tokens over its runs, its ratio to CPT with the
interval low to high, and the verdicts quoting the paper's hours of the row they judge (over
CPT's, the ratio CPT's hours divide) and the tolerance bound of (T10a)."""

from __future__ import annotations

from longred_bench.reports.runs import Run
from longred_bench.reports.table10_report import cost_table, costs, table10_verdicts

EXT = "pi:factor=2"


def _run(seconds: float, tokens: float) -> Run:
    return Run(train={"seconds": seconds, "tokens": tokens, "steps": 4})


def _runs() -> dict:
    return {
        (EXT, "cpt", 0): _run(40.0, 400.0),
        (EXT, "cpt", 1): _run(44.0, 400.0),
        (EXT, "mix-cpt", 0): _run(30.0, 400.0),
        (EXT, "mix-cpt", 1): _run(33.0, 400.0),
        (EXT, "longred-c", 0): _run(50.0, 400.0),
        (EXT, "longred-c", 1): _run(90.0, 600.0),
    }


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_a_rows_tokens_are_their_mean_and_its_interval_reads_low_to_high() -> None:
    lines = cost_table(costs(_runs()))
    longred = _cells(next(x for x in lines if "| LongReD-C |" in x))
    assert longred[4] == "500"  # (400 + 600) / 2 tokens
    estimate, interval = longred[7].split(" [")
    low, high = (float(x) for x in interval.rstrip("]").split(", "))
    assert low <= float(estimate) <= high and low < high


def test_each_verdict_quotes_the_papers_hours_of_its_row_and_its_bound() -> None:
    runs = _runs()
    a, b = table10_verdicts(runs, costs(runs))
    assert (a.key, b.key) == ("T10a", "T10b")
    assert a.paper == (
        "Llama-3-8B on 8 x A800, 32K: 22.4 h against 22.4 h (1.00x); 128K: 33.4 h against "
        "42.8 h (0.78x) ([sec])."
    )
    assert b.paper == (
        "Llama-3-8B on 8 x A800, 32K: 19.9 h against 22.4 h (0.89x); 128K: 30.4 h against "
        "42.8 h (0.71x) ([sec])."
    )
    assert "entirely below 1.10 -> reproduced" in a.rule
    assert "within the 10% tolerance" in a.rule
