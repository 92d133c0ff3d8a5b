"""Skipped position ids (LongReD-U / LongReD-C) and the truncated Gaussian behind CREAM."""

import math

import pytest
import torch

from longred_bench.errors import UserError
from longred_bench.training.positions import SAMPLERS, skipped_position_ids, truncated_normal

CASES = [(256, 4), (256, 16), (64, 2), (1024, 8)]
# CREAM's scale for f = 4, 16, 8 (sigma 3 and 5), a nearly flat one (f = 2), both far tails
TN_CASES = [
    (5.0, 3.0, 2.0, 8.0),
    (17.0, 3.0, 2.0, 32.0),
    (9.0, 5.0, 2.0, 16.0),
    (3.0, 3.0, 2.0, 4.0),
    (0.0, 1.0, 3.0, 5.0),
    (0.0, 1.0, -5.0, -3.0),
    (0.0, 1.0, 30.0, 31.0),
]


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _phi(z: float) -> float:
    return math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)


def _cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2))


def _mass(a: float, b: float) -> float:
    """P(a <= Z <= b) for a standard normal Z, precise in either tail."""
    return _cdf(b) - _cdf(a) if a <= 0 else _cdf(-a) - _cdf(-b)


def _tn_moments(mu: float, sigma: float, low: float, high: float) -> tuple[float, float]:
    """Analytic mean and std of N(mu, sigma^2) truncated to [low, high]."""
    a, b = (low - mu) / sigma, (high - mu) / sigma
    z = _mass(a, b)
    shift = (_phi(a) - _phi(b)) / z
    var = sigma**2 * (1 + (a * _phi(a) - b * _phi(b)) / z - shift**2)
    return mu + sigma * shift, math.sqrt(var)


def _head_of(ids: torch.Tensor, t: int, f: int) -> int:
    """The head (= tail) size whose layout every row matches, the larger if both do."""
    ls = t * f
    fits = [
        h
        for h in sorted({t // 3, 4 * f})
        if torch.equal(ids[:, :h], torch.arange(h).expand(len(ids), h))
        and torch.equal(ids[:, t - h :], torch.arange(ls - h, ls).expand(len(ids), h))
    ]
    assert fits, "no head size in {T//3, 4f} matches the ids"
    return fits[-1]


def _ends(t: int, f: int, sampler: str, seeds: range, batch: int, **kw) -> dict[int, torch.Tensor]:
    """Exclusive middle ends grouped by head size, over many calls."""
    out: dict[int, list[torch.Tensor]] = {}
    for seed in seeds:
        ids = skipped_position_ids(t, t * f, batch, sampler=sampler, generator=_gen(seed), **kw)
        head = _head_of(ids, t, f)
        out.setdefault(head, []).append(ids[:, t - head - 1] + 1)
    return {h: torch.cat(v) for h, v in out.items()}


@pytest.mark.parametrize("sampler", SAMPLERS)
@pytest.mark.parametrize(("t", "f"), CASES)
def test_layout_properties(t: int, f: int, sampler: str) -> None:
    ls = t * f
    heads = set()
    for seed in range(40):
        ids = skipped_position_ids(t, ls, 16, sampler=sampler, generator=_gen(seed))
        assert ids.shape == (16, t) and ids.dtype == torch.long
        assert (ids.diff(dim=1) > 0).all(), "ids must be strictly increasing"
        assert ids.min() >= 0 and ids.max() < ls
        head = _head_of(ids, t, f)
        heads.add(head)
        mid = ids[:, head : t - head]
        assert (mid.diff(dim=1) == 1).all(), "the middle chunk is consecutive"
        assert (mid[:, 0] >= head).all() and (mid[:, -1] < ls - head).all()
    assert heads == {t // 3, 4 * f}, "both head sizes must occur over 40 calls"


def test_same_seed_same_ids_and_seeds_differ() -> None:
    for sampler in SAMPLERS:
        a = skipped_position_ids(256, 1024, 8, sampler=sampler, generator=_gen(7))
        b = skipped_position_ids(256, 1024, 8, sampler=sampler, generator=_gen(7))
        c = skipped_position_ids(256, 1024, 8, sampler=sampler, generator=_gen(8))
        assert torch.equal(a, b) and not torch.equal(a, c)
    torch.manual_seed(3)
    assert skipped_position_ids(64, 128, 2).shape == (2, 64)  # default global generator


def test_uniform_end_covers_both_extremes_evenly() -> None:
    t, f = 64, 2
    ends = _ends(t, f, "uniform", range(12), 4000)
    assert set(ends) == {t // 3, 4 * f}
    for head, end in ends.items():
        lo, hi = t - head, t * f - head  # un-skipped layout .. middle abutting the tail
        assert end.min() == lo and end.max() == hi
        assert abs(end.double().mean().item() - (lo + hi) / 2) < 0.05 * (hi - lo)
    # the lowest end is the teacher's layout except for the tail
    ids = skipped_position_ids(t, t * f, 4000, generator=_gen(0))
    head = _head_of(ids, t, f)
    unskipped = (ids[:, : t - head] == torch.arange(t - head)).all(dim=1)
    assert unskipped.any()


@pytest.mark.parametrize(("mu", "sigma", "low", "high"), TN_CASES)
def test_truncated_normal_matches_analytic_moments(
    mu: float, sigma: float, low: float, high: float
) -> None:
    n = 200_000
    x = truncated_normal(mu, sigma, low, high, n, _gen(0))
    assert x.shape == (n,) and x.dtype == torch.float64
    assert x.min() >= low and x.max() <= high
    mean, std = _tn_moments(mu, sigma, low, high)
    assert abs(x.mean().item() - mean) < 5 * std / math.sqrt(n)
    assert abs(x.std().item() - std) < 0.01 * std


@pytest.mark.parametrize(
    ("mu", "sigma", "low", "high"), [(3.0, 3.0, 2.0, 4.0), (5.0, 3.0, 2.0, 8.0)]
)
def test_truncated_normal_not_piled_at_bounds(
    mu: float, sigma: float, low: float, high: float
) -> None:
    n = 200_000
    x = truncated_normal(mu, sigma, low, high, n, _gen(1))
    z = _mass((low - mu) / sigma, (high - mu) / sigma)
    edge = 0.05 * (high - low)
    for a, b in [(low, low + edge), (high - edge, high)]:
        expected = _mass((a - mu) / sigma, (b - mu) / sigma) / z
        got = ((x >= a) & (x <= b)).double().mean().item()
        assert abs(got - expected) < 0.1 * expected, (a, b, got, expected)
    # an unnormalised CDF would put Phi((low - mu) / sigma) of the mass exactly on `low`
    assert (x == low).double().mean().item() < 1e-3


def test_truncated_normal_is_deterministic_and_shaped() -> None:
    a = truncated_normal(0.0, 1.0, -1.0, 2.0, (3, 4), _gen(5))
    assert a.shape == (3, 4) and torch.equal(
        a, truncated_normal(0.0, 1.0, -1.0, 2.0, (3, 4), _gen(5))
    )


@pytest.mark.parametrize(("t", "f", "sigma"), [(256, 16, 3.0), (256, 4, 3.0), (1024, 8, 5.0)])
def test_cream_end_follows_its_scale_not_uniform(t: int, f: int, sigma: float) -> None:
    """Mean and std of the middle's end against their values under r ~ TN(1 + f, sigma, 2, 2f).

    Given r the end is uniform on about [h + (chunk - 1) r / 2, r T / 2 - h] (floors move it by
    under one id): mean r (chunk - 1 + T) / 4, width (r / 2 - 1)(2 h + 1).
    """
    mean_r, std_r = _tn_moments(1.0 + f, sigma, 2.0, 2.0 * f)
    cream = _ends(t, f, "cream", range(10), 3000, cream_sigma=sigma)
    uniform = _ends(t, f, "uniform", range(10), 3000)
    assert set(cream) == {t // 3, 4 * f}
    for head, end in cream.items():
        chunk, lo, hi = t - 2 * head, t - head, t * f - head
        assert end.min() >= lo and end.max() <= hi
        mean = mean_r * (chunk - 1 + t) / 4
        half_scale_sq = std_r**2 / 4 + (mean_r / 2 - 1) ** 2  # E[(r / 2 - 1)^2]
        var = (2 * head + 1) ** 2 * half_scale_sq / 12 + std_r**2 * (chunk - 1 + t) ** 2 / 16
        tol_mean, tol_std = 0.01 * (hi - lo), 0.03 * math.sqrt(var)
        assert abs(end.double().mean().item() - mean) < tol_mean, head
        assert abs(end.double().std().item() - math.sqrt(var)) < tol_std, head
        # the same checks must reject the uniform sampler (guards the test's own power)
        other = uniform[head].double()
        assert (
            abs(other.mean().item() - mean) > 3 * tol_mean
            or abs(other.std().item() - math.sqrt(var)) > 3 * tol_std
        )


def test_cream_sigma_changes_the_spread() -> None:
    narrow = _ends(256, 16, "cream", range(4), 3000, cream_sigma=1.0)
    wide = _ends(256, 16, "cream", range(4), 3000, cream_sigma=8.0)
    for head in set(narrow) & set(wide):
        assert wide[head].double().std() > 1.5 * narrow[head].double().std()


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((256, 1024, 2), {"sampler": "gauss"}, "unknown position sampler"),
        ((256, 1000, 2), {}, "multiple >= 2"),
        ((256, 256, 2), {}, "multiple >= 2"),
        ((32, 128, 2), {}, "too short"),
        ((2, 8, 2), {}, "too short"),
        ((256, 1024, 0), {}, "batch >= 1"),
        ((256, 1024, 2), {"sampler": "cream", "cream_sigma": 0.0}, "cream_sigma"),
    ],
)
def test_bad_input_raises_user_error(args: tuple, kwargs: dict, match: str) -> None:
    with pytest.raises(UserError, match=match) as info:
        skipped_position_ids(*args, **kwargs)
    assert "\n" not in str(info.value)


def test_truncated_normal_bad_input() -> None:
    with pytest.raises(UserError, match="sigma"):
        truncated_normal(0.0, 0.0, -1.0, 1.0, 4)
    with pytest.raises(UserError, match="low < high"):
        truncated_normal(0.0, 1.0, 1.0, 1.0, 4)
