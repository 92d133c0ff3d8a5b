"""Pinned input checks of :mod:`longred_bench.metrics.stats` that the other interval tests leave
open: a level of 0 is refused like one of 1; the seed-level interval refuses runs with no
groups, a group with no members and a member whose runs share no documents, with two or more
runs a side as with one; the run-step ratio refuses a single run whose resampled ratio is not
positive and too few resamples to take a single run's spread, on whichever side that run is;
the model/document bootstrap refuses zero models."""

from __future__ import annotations

import math

import numpy as np
import pytest

from longred_bench.errors import UserError
from longred_bench.metrics.stats import (
    RunSteps,
    bootstrap_mean_ci,
    model_document_bootstrap_ci,
    run_step_ratio_ci,
    seed_mean_of_means_diff_ci,
)


def _run(value: float, n: int = 4) -> dict:
    """One run scoring ``value + i`` on documents ``i < n`` of member ``g/t``."""
    return {"g": {"t": {i: value + i for i in range(n)}}}


def test_a_level_of_zero_is_refused() -> None:
    """Level 0 is no interval at all (both ends at the median): refused, as level 1 is."""
    with pytest.raises(UserError, match="strictly between 0 and 1"):
        bootstrap_mean_ci([1.0, 2.0, 3.0], level=0.0)


@pytest.mark.parametrize("seeds", [1, 3])
def test_seed_interval_refuses_runs_with_no_groups(seeds: int) -> None:
    """Runs with nothing to average are refused, not read as a difference of 0 [0, 0]."""
    with pytest.raises(UserError, match="no groups"):
        seed_mean_of_means_diff_ci([{}] * seeds, [{}] * 2)


def test_seed_interval_refuses_a_group_with_no_members() -> None:
    """A group with no members is refused rather than left out of the mean over groups (which
    would halve the other group's weight)."""
    runs = [{**_run(v), "h": {}} for v in (0.0, 1.0)]
    with pytest.raises(UserError, match="group 'h' has no members"):
        seed_mean_of_means_diff_ci(runs, [{**_run(5.0), "h": {}}] * 2)


def test_seed_interval_names_a_member_whose_runs_share_no_documents() -> None:
    """Seeds scored on disjoint documents: the member is named as having nothing to pair."""
    other = {"g": {"t": {i + 10: float(i) for i in range(4)}}}
    with pytest.raises(UserError, match="g/t: the runs share no item keys"):
        seed_mean_of_means_diff_ci([_run(0.0), _run(1.0)], [other, _run(2.0)])


def _steady_runs() -> list[RunSteps]:
    """Two runs of constant, positive steps (rates 1.0 and 1.2 per token)."""
    return [RunSteps([1.0] * 4, [1.0] * 4), RunSteps([1.2] * 4, [1.0] * 4)]


def test_run_ratio_refuses_a_single_run_whose_resampled_ratio_is_not_positive() -> None:
    """One run of steps -1 and 3 (a positive rate, 1 per token) resamples to -1 per token at
    times: its log-rate has no spread to add, so the comparison is refused, not NaN."""
    single = [RunSteps([-1.0, 3.0], [1.0, 1.0])]
    with pytest.raises(UserError, match="must be positive to compare runs"):
        run_step_ratio_ci(_steady_runs(), single, n_boot=200)


@pytest.mark.parametrize("single_side", ["a", "b"])
def test_run_ratio_needs_two_resamples_for_a_single_run_against_runs(single_side: str) -> None:
    """A single run's spread is the variance of its resampled log-rate: one resample has none,
    so ``n_boot=1`` is refused whichever side holds the single run."""
    single = [RunSteps([1.0, 2.0, 3.0], [1.0, 1.0, 1.0])]
    a, b = (single, _steady_runs()) if single_side == "a" else (_steady_runs(), single)
    with pytest.raises(UserError, match="n_boot must be at least 2"):
        run_step_ratio_ci(a, b, n_boot=1)


def test_run_ratio_with_runs_on_both_sides_takes_one_resample() -> None:
    """With two or more runs a side no step is resampled into the interval: ``n_boot=1`` gives
    the same finite interval as the default."""
    a, b = _steady_runs(), [RunSteps([2.0] * 4, [1.0] * 4), RunSteps([2.6] * 4, [1.0] * 4)]
    one = run_step_ratio_ci(a, b, n_boot=1)
    assert all(math.isfinite(x) for x in one)
    assert tuple(one) == pytest.approx(tuple(run_step_ratio_ci(a, b)))


def test_model_document_bootstrap_refuses_zero_models() -> None:
    """No model to draw: a user error naming the levels, before the statistic is called."""

    def statistic(models: np.ndarray, docs: list[np.ndarray]) -> float:
        return float(len(models))

    with pytest.raises(UserError, match="at least one member"):
        model_document_bootstrap_ci(statistic, 0, [3], n_boot=4)
