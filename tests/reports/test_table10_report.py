"""LongReD Table 10's cost claims (``longred_bench.reports.table10_report``) on hand-built runs:
the ratio of seconds per token and its interval over the runs, and each rule's labels (a row of
one run not comparable; a spread wider than the tolerance undecided)."""

from __future__ import annotations

import pytest

from longred_bench.metrics.stats import Interval
from longred_bench.reports.table10_report import Cost, cost_label, cost_premise, ratio_interval
from longred_bench.reports.verdict_rules import (
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    REPRODUCED,
    UNDECIDED,
)


def _cost(row: str, seconds: tuple[float, ...], tokens: float = 1000.0) -> Cost:
    return Cost("abf:theta=2e6", row, seconds, (tokens,) * len(seconds), (64.0,) * len(seconds))


def test_ratio_is_seconds_per_token_and_its_interval_widens_with_the_runs_spread() -> None:
    cpt = _cost("cpt", (100.0, 100.0, 100.0))
    # Twice the seconds on half the tokens' worth per second: 2x per token, whatever the spread.
    steady = ratio_interval(_cost("longred-c", (100.0, 100.0, 100.0), tokens=500.0), cpt)
    assert steady.estimate == pytest.approx(2.0) and steady.low == steady.high == pytest.approx(2)
    noisy = ratio_interval(_cost("longred-c", (60.0, 100.0, 140.0)), cpt)
    assert noisy.estimate == pytest.approx(1.0)
    assert noisy.low < 0.8 and noisy.high > 1.2


@pytest.mark.parametrize(
    ("key", "interval", "label"),
    [
        ("T10a", Interval(0.9, 0.8, 1.05), REPRODUCED),  # at most CPT's, within the tolerance
        ("T10a", Interval(1.5, 1.3, 1.7), NOT_REPRODUCED),
        ("T10a", Interval(1.0, 0.7, 1.4), UNDECIDED),  # spread wider than the tolerance
        ("T10b", Interval(0.8, 0.7, 0.95), REPRODUCED),
        ("T10b", Interval(1.1, 1.02, 1.2), NOT_REPRODUCED),
        ("T10b", Interval(0.95, 0.8, 1.1), UNDECIDED),
    ],
)
def test_cost_rules(key: str, interval: Interval, label: str) -> None:
    assert cost_label(key, interval) == label


def test_one_run_per_row_is_not_comparable() -> None:
    # A clear ratio, but from a single timing of one row: the spread is unknown.
    quiet = ((1.0, 2),) * 3
    three = Cost("x", "cpt", (1.0,) * 3, (1.0,) * 3, (1.0,) * 3, (), quiet)
    one = Cost("x", "longred-c", (0.8,), (1.0,), (1.0,), (), quiet[:1])
    assert cost_premise(one, three) == cost_premise(three, one) == "one run, no spread"
    assert cost_premise(three, three) is None
    clear = Interval(0.8, 0.8, 0.8)
    assert cost_label("T10a", clear, cost_premise(one, three)) == NOT_COMPARABLE
    assert cost_label("T10a", clear, cost_premise(three, three)) == REPRODUCED


def test_peak_memory_cell_shows_the_largest_recorded_peak_and_its_kind() -> None:
    from longred_bench.reports.table10_report import peak_cell

    assert peak_cell(_cost("cpt", (1.0, 1.0))) == "not recorded"  # runs from before it was kept
    full = Cost("x", "cpt", (1.0, 1.0), (1.0, 1.0), (1.0, 1.0),
                ((812.0, "process RSS"), (1530.4, "process RSS")))  # fmt: skip
    assert peak_cell(full) == "1,530 MiB (process RSS)"
    part = Cost("x", "cpt", (1.0, 1.0, 1.0), (1.0,) * 3, (1.0,) * 3, ((700.0, "CUDA allocator"),))
    assert peak_cell(part) == "700 MiB (CUDA allocator, 1 of 3 runs)"


def test_machine_load_cell_shows_the_highest_load_a_row_was_timed_under() -> None:
    from longred_bench.reports.table10_report import load_cell

    assert load_cell(_cost("cpt", (1.0, 1.0))) == "not recorded"  # runs from before it was kept
    busy = Cost("x", "mix-cpt", (1.0, 1.0), (1.0, 1.0), (1.0, 1.0), (), ((2.1, 2), (3.7, 2)))
    assert load_cell(busy) == "3.7 on 2 CPUs"
    part = Cost("x", "cpt", (1.0,) * 3, (1.0,) * 3, (1.0,) * 3, (), ((1.9, 16),))
    assert load_cell(part) == "1.9 on 16 CPUs, 1 of 3 runs"


def test_costs_take_each_runs_load_from_its_training_record() -> None:
    from longred_bench.reports.runs import Run, RunKey
    from longred_bench.reports.table10_report import costs

    def run(seed: int, **load: float) -> tuple[RunKey, Run]:
        return ("abf:theta=2e6", "cpt", seed), Run(
            train={"seconds": 10.0, "tokens": 1000, "steps": 4, **load}
        )

    runs = dict([run(0, load_1min_start=1.2, load_1min_end=3.4, cpus=2), run(1)])
    (cost,) = costs(runs)
    assert cost.loads == ((3.4, 2),)  # the larger of start and end; the older run has none


def test_timings_under_unknown_or_oversubscribed_load_are_not_comparable() -> None:
    def cost(loads: tuple) -> Cost:
        return Cost("x", "cpt", (1.0, 1.0), (1.0, 1.0), (1.0, 1.0), (), loads)

    assert cost(((1.2, 2), (1.9, 2))).timed_quietly
    assert not cost(((1.2, 2),)).timed_quietly  # one run's load not recorded
    assert not cost(((1.2, 2), (3.5, 2))).timed_quietly  # other work shared the 2 cores
    # two workers on 2 cores and their orchestration: about 2, a few percent over
    assert cost(((2.18, 2), (2.2, 2))).timed_quietly
    assert not cost(((2.0, 2), (2.25, 2))).timed_quietly
    assert not cost(((1.2, 0), (1.0, 0))).timed_quietly  # CPU count unknown
    clear = Interval(0.8, 0.7, 0.9)
    quiet, loud = cost(((1.2, 2), (1.9, 2))), cost(((1.2, 2), (3.5, 2)))
    assert cost_premise(loud, quiet) == cost_premise(quiet, loud) is not None
    assert "above its cores" in (cost_premise(loud, quiet) or "")
    assert cost_label("T10b", clear, cost_premise(loud, quiet)) == NOT_COMPARABLE
    assert cost_label("T10b", clear, cost_premise(quiet, quiet)) == REPRODUCED


def test_per_step_timings_from_the_records_are_resampled_within_a_single_run() -> None:
    """Runs whose totals agree but whose steps were uneven: with one run a row, the per-step
    records widen the interval; with three, the runs' own rates (which hold their steps' noise)
    decide, and they agree. The verdict's text says how many steps there were."""
    from longred_bench.reports.runs import Run
    from longred_bench.reports.table10_report import costs, steps_note

    def run(row: str, seed: int, steps: list[float] | None) -> tuple:
        run = Run(train={"seconds": 40.0, "tokens": 400.0, "steps": 4})
        if steps is not None:
            run.step_seconds = [sum(steps[: i + 1]) for i in range(4)]
            run.step_tokens = [100.0 * (i + 1) for i in range(4)]
        return ("pi:factor=2", row, seed), run

    uneven = [1.0, 1.0, 1.0, 37.0]
    totals = dict(run(r, s, None) for r in ("cpt", "mix-cpt") for s in range(3))
    stepped = dict(run(r, s, uneven) for r in ("cpt", "mix-cpt") for s in range(3))
    (cpt_t, mix_t), (cpt_s, mix_s) = costs(totals), costs(stepped)
    flat, wide = ratio_interval(mix_t, cpt_t), ratio_interval(mix_s, cpt_s)
    assert flat.estimate == wide.estimate == pytest.approx(1.0)
    assert flat.low == flat.high == pytest.approx(1.0)  # equal totals: no spread over runs
    assert wide.low == wide.high == pytest.approx(1.0)  # ... whatever their steps did
    single = dict(run(r, 0, uneven) for r in ("cpt", "mix-cpt"))
    one = ratio_interval(*costs(single)[::-1])
    assert one.low < 0.8 and one.high > 1.2  # one run a row: its steps' spread, resampled
    assert steps_note(cpt_t) == "3 runs" and steps_note(cpt_s) == "3 runs, 12 steps"
    # A record that does not cover its run's steps: that run counts with its totals.
    stepped[("pi:factor=2", "cpt", 0)].step_seconds = [1.0, 2.0]
    assert steps_note(costs(stepped)[0]) == "3 runs, 9 steps"
