"""Spearman's rho and its bootstrap interval over pairs (LongReD Figure 2's statistic)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from longred_bench.errors import UserError
from longred_bench.metrics.correlation import average_ranks, bootstrap_spearman_ci, spearman


def test_ranks_average_their_ties():
    assert average_ranks(np.array([3.0, 1.0, 3.0, 2.0])).tolist() == [3.5, 1.0, 3.5, 2.0]


def test_spearman_of_monotone_reversed_and_tied_samples():
    x = [0.1, 0.5, 0.7, 0.9, 2.0]
    assert spearman(x, [v**3 for v in x]) == pytest.approx(1.0)
    assert spearman(x, [-v for v in x]) == pytest.approx(-1.0)
    # with ties: Pearson correlation of the average ranks (1, 2.5, 2.5, 4) and (1, 2, 3, 4)
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(4.5 / math.sqrt(4.5 * 5))
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))


def test_interval_excludes_0_for_a_clear_trend_and_includes_it_for_noise():
    rng = np.random.default_rng(3)
    x = np.linspace(0, 1, 14)
    trend = bootstrap_spearman_ci(x, x + rng.normal(0, 0.1, 14))
    noise = bootstrap_spearman_ci(x, rng.normal(0, 1, 14))
    assert trend.low > 0 and trend.estimate > 0.8
    assert noise.low < 0 < noise.high
    assert bootstrap_spearman_ci(x, x[::-1]).high < 0


def test_bad_input_is_refused():
    with pytest.raises(UserError, match="same length >= 3"):
        spearman([1, 2], [1, 2])
    with pytest.raises(UserError, match="n_boot"):
        bootstrap_spearman_ci([1, 2, 3], [1, 2, 3], n_boot=0)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_spearman_refuses_values_that_have_no_rank(bad: float) -> None:
    """A NaN ranked anywhere: rho 0.8 for [1, 2, nan, 4] against [1, 2, 3, 4], with no word."""
    with pytest.raises(UserError, match="NaN or infinite"):
        spearman([1, 2, bad, 4], [1, 2, 3, 4])
    with pytest.raises(UserError, match="NaN or infinite"):
        bootstrap_spearman_ci([1, 2, 3, 4], [1, bad, 3, 4])


def test_interval_is_the_percentiles_of_resampled_rhos_for_the_given_seed_and_level():
    """The interval is the ((1 - level) / 2, (1 + level) / 2) quantiles of rho over resampled
    pairs drawn by numpy.random.default_rng(seed), constant resamples dropped: computed here
    one resample at a time with spearman()."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=9)
    y = x + rng.normal(size=9)
    for seed, level in [(0, 0.95), (7, 0.8)]:
        draws = np.random.default_rng(seed).integers(0, 9, size=(300, 9))
        reps = []
        for d in draws:
            if len(set(x[d])) > 1 and len(set(y[d])) > 1:
                reps.append(spearman(x[d], y[d]))
        low, high = np.quantile(reps, [(1 - level) / 2, (1 + level) / 2])
        ci = bootstrap_spearman_ci(x, y, n_boot=300, level=level, seed=seed)
        assert ci.estimate == pytest.approx(spearman(x, y))
        assert (ci.low, ci.high) == pytest.approx((low, high), rel=1e-9)
    assert bootstrap_spearman_ci(x, y, seed=1) != bootstrap_spearman_ci(x, y, seed=2)


def test_bad_level_and_unequal_lengths_are_refused():
    with pytest.raises(UserError, match="level in"):
        bootstrap_spearman_ci([1, 2, 3], [1, 2, 3], level=1.0)
    with pytest.raises(UserError, match="level in"):
        bootstrap_spearman_ci([1, 2, 3], [1, 2, 3], level=0.0)
    with pytest.raises(UserError, match="same length"):
        spearman([1, 2, 3], [1, 2, 3, 4])
