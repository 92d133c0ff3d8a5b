"""``longred_bench.metrics.stats`` pinned down exactly: an interval's ends are the quantiles of
exactly ``n_boot`` full-size resamples drawn from ``default_rng(seed)`` in the documented order
(the estimate is not one of them), a paired interval's resamples being those of the matched
differences; two independent samples are resampled each on its own; every member and group
enters a mean of means through a plain mean (not a median); a nested interval does not depend
on the order in which its mappings list groups and members; the seed bootstrap pairs only the
item keys every run has; a reference side whose ratio is 0 is refused; and a model/document
interval is kept when exactly half of its replicates are defined."""

from __future__ import annotations

import math

import numpy as np
import pytest

from longred_bench.errors import UserError
from longred_bench.metrics.stats import (
    RunSteps,
    bootstrap_diff_ci,
    bootstrap_mean_ci,
    bootstrap_mean_of_means_ci,
    model_document_bootstrap_ci,
    paired_bootstrap_diff_ci,
    paired_bootstrap_mean_of_means_diff_ci,
    run_step_ratio_ci,
    seed_mean_of_means_diff_ci,
)


def test_mean_interval_ends_are_quantiles_of_the_seeded_full_size_resamples() -> None:
    values = np.array([0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    ci = bootstrap_mean_ci(values, n_boot=50, level=0.9, seed=3)
    # The documented draws: one [n_boot, n] block of indices from default_rng(seed).
    idx = np.random.default_rng(3).integers(0, 7, size=(50, 7))
    low, high = np.quantile(values[idx].mean(axis=1), [0.05, 0.95])
    assert ci.estimate == pytest.approx(63.0 / 7.0)
    assert ci.low == pytest.approx(low, abs=1e-12)
    assert ci.high == pytest.approx(high, abs=1e-12)


def test_one_resample_gives_an_interval_at_that_resample() -> None:
    values = np.array([0.0, 3.0, 9.0])
    ci = bootstrap_mean_ci(values, n_boot=1, seed=11)
    (row,) = np.random.default_rng(11).integers(0, 3, size=(1, 3))
    assert ci.estimate == pytest.approx(4.0)
    assert ci.low == ci.high == pytest.approx(values[row].mean(), abs=1e-12)


def test_independent_samples_are_resampled_each_on_its_own() -> None:
    a = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    b = a + 0.5  # paired, this shift would have a zero-width interval; unpaired it does not
    ci = bootstrap_diff_ci(a, b, n_boot=200, seed=1)
    rng = np.random.default_rng(1)
    draws_a = rng.integers(0, 5, size=(200, 5))  # a's resamples first, then b's
    draws_b = rng.integers(0, 5, size=(200, 5))
    low, high = np.quantile(b[draws_b].mean(axis=1) - a[draws_a].mean(axis=1), [0.025, 0.975])
    assert ci.estimate == pytest.approx(0.5)
    assert ci.high - ci.low > 1.0
    assert ci.low == pytest.approx(low, abs=1e-12) and ci.high == pytest.approx(high, abs=1e-12)


def test_paired_interval_resamples_the_matched_differences_with_the_seed() -> None:
    a = {"d1": 0.0, "d2": 1.0, "d3": 0.5, "d4": 0.0, "only_a": 9.0}
    b = {"d4": 1.0, "d3": 0.0, "d2": 1.0, "d1": 0.25}
    diffs = np.array([0.25, 0.0, -0.5, 1.0])  # b - a over the keys in sorted order
    ci = paired_bootstrap_diff_ci(a, b, n_boot=40, level=0.8, seed=9)
    idx = np.random.default_rng(9).integers(0, 4, size=(40, 4))
    low, high = np.quantile(diffs[idx].mean(axis=1), [0.1, 0.9])
    assert ci.estimate == pytest.approx(0.1875)
    assert ci.low == pytest.approx(low, abs=1e-12) and ci.high == pytest.approx(high, abs=1e-12)


def test_members_and_groups_enter_through_a_mean_not_a_median() -> None:
    # Three constant members (or groups) 0, 0 and 0.9: the mean is 0.3, the median 0.
    members = {"g": {"a": [0.0, 0.0], "b": [0.0], "c": [0.9, 0.9, 0.9]}}
    groups = {"x": {"t": [0.0]}, "y": {"t": [0.0, 0.0]}, "z": {"t": [0.9]}}
    for nested in (members, groups):
        ci = bootstrap_mean_of_means_ci(nested, n_boot=20)
        assert tuple(ci) == pytest.approx((0.3, 0.3, 0.3))
        zeros = {g: {m: dict.fromkeys(range(len(v)), 0.0) for m, v in ms.items()}
                 for g, ms in nested.items()}  # fmt: skip
        shifted = {g: {m: dict(enumerate(v)) for m, v in ms.items()} for g, ms in nested.items()}
        paired = paired_bootstrap_mean_of_means_diff_ci(zeros, shifted, n_boot=20)
        assert tuple(paired) == pytest.approx((0.3, 0.3, 0.3))
        seeds = seed_mean_of_means_diff_ci([zeros], [shifted], n_boot=20)
        assert tuple(seeds) == pytest.approx((0.3, 0.3, 0.3))


def test_nested_intervals_do_not_depend_on_the_order_of_the_mappings() -> None:
    x = {"p": [0.1, 0.9, 0.4], "q": [0.3, 0.2, 0.8, 0.5]}
    y = {"r": [1.0, 0.0], "s": [0.7, 0.6, 0.1]}
    forward = bootstrap_mean_of_means_ci({"x": x, "y": y}, n_boot=100, seed=4)
    backward = {"y": dict(reversed(y.items())), "x": dict(reversed(x.items()))}
    assert bootstrap_mean_of_means_ci(backward, n_boot=100, seed=4) == forward
    assert forward.low < forward.estimate < forward.high


def test_seed_bootstrap_pairs_only_the_keys_every_run_has() -> None:
    # Documents 3 (only in a) and 4 (only in b) are left out: the difference is 1 on 1 and 2.
    a = [{"g": {"t": {1: 0.0, 2: 0.0, 3: 5.0}}}]
    b = [{"g": {"t": {1: 1.0, 2: 1.0, 4: 7.0}}}, {"g": {"t": {1: 1.0, 2: 1.0, 3: 9.0}}}]
    ci = seed_mean_of_means_diff_ci(a, b, n_boot=50)
    assert tuple(ci) == pytest.approx((1.0, 1.0, 1.0))


def test_a_reference_side_whose_ratio_is_zero_is_refused() -> None:
    zero = [RunSteps(values=[0.0, 0.0], weights=[1.0, 1.0])]
    other = [RunSteps(values=[1.0], weights=[1.0])]
    with pytest.raises(UserError, match="reference side's ratio must be positive"):
        run_step_ratio_ci(zero, other, n_boot=10)


def _in_turn(values: list[float]):
    """A statistic that returns ``values`` in turn: the data's first, then each replicate's."""
    it = iter(values)
    return lambda models, documents: next(it)


def test_model_document_interval_keeps_exactly_half_its_replicates() -> None:
    nan = math.nan
    # 8 replicates, 4 of them NaN: not fewer than half, so the interval is the quantiles of
    # the 4 defined ones, [1, 2, 3, 4]: 1.75 and 3.25 at level 0.5.
    stat = _in_turn([10.0, 1.0, nan, 2.0, nan, 3.0, nan, 4.0, nan])
    ci = model_document_bootstrap_ci(stat, 2, [3], n_boot=8, level=0.5)
    assert tuple(ci) == pytest.approx((10.0, 1.75, 3.25))
    # One more NaN (3 of 8 defined) gives no interval.
    stat = _in_turn([10.0, 1.0, nan, 2.0, nan, 3.0, nan, nan, nan])
    ci = model_document_bootstrap_ci(stat, 2, [3], n_boot=8, level=0.5)
    assert ci.estimate == 10.0 and math.isnan(ci.low) and math.isnan(ci.high)
