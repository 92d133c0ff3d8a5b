"""Rank statistics pinned down exactly (``longred_bench.metrics.correlation`` and
``longred_bench.metrics.rank_trend``): a Spearman interval is kept when exactly half of its
resamples correlate; a rank trend's estimate is Spearman's rho of the settings against the
*mean* of each setting over the items, its interval the percentiles of the rhos of the seeded
item resamples (every item can be drawn), and fewer than 3 settings, a values array with a row
count other than the settings', or a level outside (0, 1) are ``UserError``s."""

from __future__ import annotations

import math

import numpy as np
import pytest

from longred_bench.errors import UserError
from longred_bench.metrics.correlation import bootstrap_spearman_ci, spearman
from longred_bench.metrics.rank_trend import bootstrap_rank_trend_ci


class _Draws:
    """Stands for numpy's generator: its resamples are the rows given."""

    def __init__(self, rows: list[list[int]]) -> None:
        self.rows = rows

    def integers(self, low: int, high: int, size: tuple[int, int]) -> np.ndarray:
        return np.array(self.rows)


def test_spearman_interval_is_kept_when_exactly_half_the_resamples_correlate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Pairs 0 and 3 drawn twice each: both sides vary, rho = 1. Pair 0 alone: no rho.
    rows = [[0, 3, 0, 3], [0, 0, 0, 0]]
    monkeypatch.setattr(np.random, "default_rng", lambda seed=None: _Draws(rows))
    ci = bootstrap_spearman_ci([0, 0, 0, 1], [0, 1, 1, 1], n_boot=2)
    assert tuple(ci) == pytest.approx((1 / 3, 1.0, 1.0))


# Three settings on three items. Means over the items: 3, 1, 2 (ranks 3, 1, 2: rho = -0.5);
# medians 0, 1, 2 would give rho = 1.
SETTINGS = [1.0, 2.0, 3.0]
VALUES = [[0.0, 0.0, 9.0], [1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]


def test_rank_trend_estimate_is_the_rho_of_the_item_means() -> None:
    ci = bootstrap_rank_trend_ci(SETTINGS, VALUES, n_boot=200)
    assert ci.estimate == pytest.approx(-0.5)


def test_rank_trend_interval_is_the_percentiles_of_the_seeded_item_resamples() -> None:
    values = np.array([[0.0, 0.0, 9.0, 4.0], [1.0, 3.0, 1.0, 2.0], [2.0, 2.0, 6.0, 0.0]])
    ci = bootstrap_rank_trend_ci(SETTINGS, values, n_boot=300, level=0.8, seed=2)
    draws = np.random.default_rng(2).integers(0, 4, size=(300, 4))
    rhos = [spearman(SETTINGS, values[:, row].mean(axis=1)) for row in draws]
    rhos = [r for r in rhos if not math.isnan(r)]
    low, high = np.quantile(rhos, [0.1, 0.9])
    assert ci.estimate == pytest.approx(spearman(SETTINGS, values.mean(axis=1)))
    assert ci.low == pytest.approx(low, abs=1e-12) and ci.high == pytest.approx(high, abs=1e-12)


def test_rank_trend_draws_the_last_item_too() -> None:
    # Only the last item separates the settings: a resample without it ties everywhere (no
    # rho); those with it give rho = 1, so more than half of them are defined.
    values = [[0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 2.0], [0.0, 0.0, 0.0, 3.0]]
    ci = bootstrap_rank_trend_ci(SETTINGS, values, n_boot=200)
    assert tuple(ci) == pytest.approx((1.0, 1.0, 1.0))


@pytest.mark.parametrize(
    ("settings", "values", "level"),
    [
        ([1.0, 2.0], [[0.0, 1.0], [1.0, 2.0]], 0.95),  # two settings: no trend to rank
        (SETTINGS, VALUES[:2], 0.95),  # a row missing
        ([1.0, 2.0, 3.0, 4.0], VALUES, 0.95),  # a row too few for four settings
        (SETTINGS, VALUES, 1.5),
        (SETTINGS, VALUES, 0.0),
    ],
)
def test_rank_trend_refuses_what_it_cannot_rank(settings, values, level) -> None:
    with pytest.raises(UserError):
        bootstrap_rank_trend_ci(settings, values, level=level, n_boot=20)


@pytest.mark.parametrize(
    ("settings", "values"),
    [([1, 2, 3], [[math.nan, 0], [1, 1], [2, 2]]), ([1, math.inf, 3], [[0, 0], [1, 1], [2, 2]])],
)
def test_rank_trend_refuses_values_it_cannot_rank(settings, values) -> None:
    with pytest.raises(UserError, match="NaN or infinite"):
        bootstrap_rank_trend_ci(settings, values, n_boot=10)
