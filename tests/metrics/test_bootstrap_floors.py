"""``metrics.correlation.bootstrap_spearman_ci`` by hand: a resample without a correlation
(one side constant) is dropped, fewer than half left gives ``nan``, and every pair can be
drawn (the last one included)."""

from __future__ import annotations

import math

import pytest

from longred_bench.metrics.correlation import bootstrap_spearman_ci, spearman


def test_the_interval_is_nan_when_fewer_than_half_the_resamples_correlate() -> None:
    # x = [0,0,0,1], y = [0,1,1,1]: a resample has both sides varying only if it draws pairs 0
    # and 3: 1 - 2 (3/4)^4 + (1/2)^4 = 0.43 of them. rho on the data: 1/3.
    ci = bootstrap_spearman_ci([0, 0, 0, 1], [0, 1, 1, 1])
    assert ci.estimate == pytest.approx(1 / 3)
    assert math.isnan(ci.low) and math.isnan(ci.high)


def test_every_pair_can_be_drawn() -> None:
    # y varies only through the last pair: about 68% of resamples draw it, and those drawing
    # just one other pair with it have rho = 1, the upper end. Never drawing it gives nan.
    x, y = [1, 2, 3, 4], [0, 0, 0, 1]
    ci = bootstrap_spearman_ci(x, y)
    assert ci.estimate == pytest.approx(spearman(x, y)) == pytest.approx(3 / math.sqrt(15))
    assert math.isfinite(ci.low) and ci.high == pytest.approx(1.0)
