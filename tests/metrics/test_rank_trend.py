"""``metrics.rank_trend.bootstrap_rank_trend_ci``'s floor: resamples whose means tie everywhere
have no rho and are dropped, and with fewer than half of them left the interval is ``nan``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from longred_bench.metrics.rank_trend import bootstrap_rank_trend_ci

# Three settings on four items. Items 0-2 of the third setting average to 0, the value of the
# other two everywhere (a tie: no rho); item 3 alone averages 0.5 (defined).
VALUES = [[0.0] * 4, [0.0] * 4, [1.0, -1.0, 0.0, 0.5]]
TIED, DEFINED = [0, 1, 2, 2], [3, 3, 3, 3]


class _Draws:
    """Stands for numpy's generator: its resamples are the rows given."""

    def __init__(self, rows: list[list[int]]) -> None:
        self.rows = rows

    def integers(self, low: int, high: int, size: tuple[int, int]) -> np.ndarray:
        return np.array(self.rows)


def _interval(monkeypatch: pytest.MonkeyPatch, rows: list[list[int]]):
    monkeypatch.setattr(np.random, "default_rng", lambda seed=None: _Draws(rows))
    return bootstrap_rank_trend_ci([1.0, 2.0, 3.0], VALUES, n_boot=len(rows))


def test_fewer_than_half_defined_resamples_give_no_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    one = _interval(monkeypatch, [TIED, TIED, TIED, DEFINED])  # 1 of 4 defined
    assert not math.isnan(one.estimate) and math.isnan(one.low) and math.isnan(one.high)
    two = _interval(monkeypatch, [TIED, TIED, DEFINED, DEFINED])  # 2 of 4: half
    assert not math.isnan(two.low) and not math.isnan(two.high)
