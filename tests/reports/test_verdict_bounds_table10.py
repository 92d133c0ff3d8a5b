"""Table 10's cost claims (:mod:`longred_bench.reports.table10_report`) at the edges the other
Table 10 tests leave open: a load recorded without the machine's CPU count is not a quiet
timing, and per-step timings count only where every run of the row recorded them."""

from __future__ import annotations

import pytest

from longred_bench.metrics.stats import RunSteps
from longred_bench.reports.table10_report import Cost, cost_premise, ratio_interval, steps_note

QUIET = ((1.0, 2),) * 2


def test_a_load_without_its_cpu_count_is_not_a_quiet_timing() -> None:
    # An idle load of 0 on a machine whose CPUs were not recorded: the premise is unknown.
    unknown = Cost("x", "longred-c", (1.0, 1.0), (1.0, 1.0), (1.0, 1.0), (), ((0.0, 0),) * 2)
    quiet = Cost("x", "cpt", (1.0, 1.0), (1.0, 1.0), (1.0, 1.0), (), QUIET)
    assert not unknown.timed_quietly and quiet.timed_quietly
    assert cost_premise(unknown, quiet) == "a run's machine load not recorded or above its cores"


def test_per_step_timings_of_some_runs_only_fall_back_to_the_totals() -> None:
    # Two runs of 100 s on 1000 tokens each; only the first recorded its steps (4 of 50 s on
    # 100 tokens: 0.5 s a token, not the totals' 0.1). The row is read from its totals.
    partial = Cost("x", "longred-c", (100.0, 100.0), (1000.0, 1000.0), (4.0, 4.0), (), QUIET,
                   (RunSteps([50.0] * 4, [100.0] * 4),))  # fmt: skip
    cpt = Cost("x", "cpt", (100.0, 100.0), (1000.0, 1000.0), (4.0, 4.0), (), QUIET)
    assert steps_note(partial) == "2 runs"
    assert ratio_interval(partial, cpt).estimate == pytest.approx(1.0)
