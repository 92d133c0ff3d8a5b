"""What ``table10.md`` shows a reader beside the labels: the paper's ratios to long-only CPT
(mixed data, then LongReD), each row's seconds per run in seed order with its ratio to CPT, and
a verdict that names each row's own runs and steps, and the rows timed under too high a load
(only those)."""

from __future__ import annotations

from longred_bench.reports.runs import Run
from longred_bench.reports.table10_report import cost_table, costs, paper_lines, table10_verdicts

EXT = "pi:factor=2"


def _run(seconds: float, steps: list[float] | None = None, load: float | None = None) -> Run:
    loads = {} if load is None else {"load_1min_start": load, "load_1min_end": load, "cpus": 2}
    run = Run(train={"seconds": seconds, "tokens": 400.0, "steps": 4, **loads})
    if steps is not None:  # per-step timings, cumulative as the train_steps record has them
        run.step_seconds = [sum(steps[: i + 1]) for i in range(4)]
        run.step_tokens = [100.0 * (i + 1) for i in range(4)]
    return run


def _runs() -> dict:
    runs = {(EXT, "cpt", s): _run(40.0, [10.0] * 4) for s in (0, 1)}
    for seed, seconds in ((2, 45.0), (0, 40.0), (1, 50.0)):
        runs[(EXT, "longred-c", seed)] = _run(seconds)
    return runs


def test_the_papers_ratios_are_mixed_then_longred_over_long_cpt() -> None:
    lines = paper_lines()
    assert "| 32K | 22.4 h | 19.9 h | 22.4 h | 0.89 | 1.00 |" in lines
    assert "| 128K | 42.8 h | 30.4 h | 33.4 h | 0.71 | 0.78 |" in lines


def test_a_rows_seconds_are_listed_in_seed_order() -> None:
    rows = cost_table(costs(_runs()))
    cpt = next(x for x in rows if "| CPT, long data |" in x)
    longred = next(x for x in rows if "| LongReD-C |" in x)
    assert "| 2 | 4 | 400 | 40, 40 | 100000 | 1.00 |" in cpt
    # seeds 0, 1, 2: 40, 50 and 45 seconds; 45 s on average over 400 tokens, 1.12x CPT's
    assert "| 3 | 4 | 400 | 40, 50, 45 | 112500 | 1.12 [" in longred


def test_a_run_under_ten_seconds_keeps_two_figures() -> None:
    """A smoke run's 0.4 s read "0" seconds per run beside its cost per token."""
    runs = {(EXT, "cpt", s): _run(secs) for s, secs in ((0, 0.43), (1, 4.26), (2, 67.4))}
    cpt = next(x for x in cost_table(costs(runs)) if "| CPT, long data |" in x)
    assert "| 0.43, 4.3, 67 |" in cpt


def test_the_verdict_names_each_rows_runs_and_steps() -> None:
    runs = _runs()
    (verdict,) = table10_verdicts(runs, costs(runs))
    assert verdict.key == "T10a"
    assert "`longred-c` 112500 s per 1M tokens (3 runs) against `cpt` 100000 (2 runs, 8 steps)" in (
        verdict.ours
    )


def test_the_timing_premise_names_only_the_rows_timed_under_load() -> None:
    def runs(cpt_load: float) -> dict:
        out = {(EXT, "cpt", s): _run(40.0, load=cpt_load) for s in (0, 1)}
        return out | {(EXT, "mix-cpt", s): _run(36.0, load=1.5) for s in (0, 1)}

    (quiet,) = table10_verdicts(runs(1.5), costs(runs(1.5)))
    assert "Timing premise failed" not in quiet.ours
    (loud,) = table10_verdicts(runs(3.5), costs(runs(3.5)))
    assert loud.ours.endswith(" Timing premise failed: `cpt` load 3.5 on 2 CPUs.")
