"""Pinned behaviour of ``training/positions.py``: the truncated Gaussian refuses a sigma that is
not a finite positive number, and samples an interval above a non-zero mean with the right
moments (the mirrored upper-tail path); the shortest original window that still has a middle
chunk is accepted; the middle's end is drawn uniformly over its whole range."""

from __future__ import annotations

import math

import pytest
import torch

from longred_bench.errors import UserError
from longred_bench.training.positions import _uniform_int, skipped_position_ids, truncated_normal


def _pdf(z: float) -> float:
    return math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)


def _upper(z: float) -> float:
    """P(Z > z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2))


def _moments(mu: float, sigma: float, low: float, high: float) -> tuple[float, float]:
    """Analytic mean and std of N(mu, sigma^2) truncated to [low, high] (low above mu)."""
    a, b = (low - mu) / sigma, (high - mu) / sigma
    mass = _upper(a) - _upper(b)
    shift = (_pdf(a) - _pdf(b)) / mass
    var = sigma**2 * (1 + (a * _pdf(a) - b * _pdf(b)) / mass - shift**2)
    return mu + sigma * shift, math.sqrt(var)


@pytest.mark.parametrize("sigma", [math.inf, math.nan, -2.0])
def test_truncated_normal_refuses_a_sigma_that_is_not_finite_and_positive(sigma: float) -> None:
    """An infinite, NaN or negative sigma is a UserError, not a sample."""
    with pytest.raises(UserError, match="sigma"):
        truncated_normal(0.0, sigma, -1.0, 1.0, 4)


@pytest.mark.parametrize(
    ("mu", "sigma", "low", "high"), [(1.0, 1.0, 3.0, 5.0), (2.0, 0.5, 3.0, 4.0)]
)
def test_an_interval_above_a_nonzero_mean_has_the_analytic_moments(
    mu: float, sigma: float, low: float, high: float
) -> None:
    """Above the mean, the samples stay in ``[low, high]`` with the truncated Gaussian's own
    mean and std (a mirror about the wrong centre would move both)."""
    n = 200_000
    x = truncated_normal(mu, sigma, low, high, n, torch.Generator().manual_seed(3))
    assert x.min() >= low and x.max() <= high
    mean, std = _moments(mu, sigma, low, high)
    assert abs(x.mean().item() - mean) < 5 * std / math.sqrt(n)
    assert abs(x.std().item() - std) < 0.01 * std


def test_the_shortest_window_takes_a_middle_chunk_of_one_token() -> None:
    """``T = 8 f + 1`` is the shortest window: head = tail = ``4 f`` leave a middle chunk of a
    single id (``T = 8 f`` leaves none and is refused)."""
    f = 2
    t = 8 * f + 1
    for seed in range(20):
        ids = skipped_position_ids(t, f * t, 4, generator=torch.Generator().manual_seed(seed))
        assert ids.shape == (4, t)
        assert bool((ids.diff(dim=1) > 0).all()) and int(ids.max()) < f * t
    with pytest.raises(UserError, match="too short"):
        skipped_position_ids(8 * f, 8 * f * f, 4)


def test_the_middles_end_is_uniform_including_its_top() -> None:
    """The integer draw behind the middle's end is uniform on ``{lo, ..., hi}`` inclusive: the
    top value is as likely as every other, not piled up."""
    n = 120_000
    lo = torch.full((n,), 5, dtype=torch.long)
    got = _uniform_int(lo, lo + 3, torch.Generator().manual_seed(0))
    assert int(got.min()) == 5 and int(got.max()) == 8
    shares = torch.bincount(got - 5, minlength=4).double() / n
    assert torch.allclose(shares, torch.full((4,), 0.25, dtype=torch.float64), atol=0.01)
    one = _uniform_int(lo[:10], lo[:10], torch.Generator().manual_seed(1))
    assert one.tolist() == [5] * 10  # lo == hi: that value
