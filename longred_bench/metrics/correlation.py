"""Spearman rank correlation and its percentile-bootstrap interval over pairs, as pure functions.

Used for LongReD Figure 2 (short-text retention against hidden similarity over extended models):
each pair is one model, so the bootstrap resamples models. Ties get their average rank; a
resample in which either side is constant has no correlation and is dropped (the interval is made
of the others; if fewer than half remain, the interval is ``nan``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from longred_bench.errors import UserError
from longred_bench.metrics.stats import Interval


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n of ``values`` (``[..., n]``, along the last axis), ties given their average."""
    order = np.argsort(values, axis=-1, kind="stable")
    ranks = np.empty_like(values, dtype=float)
    np.put_along_axis(ranks, order, np.arange(1, values.shape[-1] + 1, dtype=float), axis=-1)
    out = ranks.copy()
    for index in np.ndindex(values.shape[:-1]):
        row, r = values[index], ranks[index]
        _, inverse, counts = np.unique(row, return_inverse=True, return_counts=True)
        if (counts > 1).any():
            sums = np.bincount(inverse, weights=r)
            out[index] = (sums / counts)[inverse]
    return out


def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson correlation of each row pair of ``x``, ``y`` (``[k, n]``); nan where constant."""
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    den = np.sqrt((xc**2).sum(-1) * (yc**2).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (xc * yc).sum(-1) / den, np.nan)


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho of paired samples ``x``, ``y`` (``[n]``, n >= 3); nan if one is constant."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or len(a) < 3:
        raise UserError(f"spearman: need two samples of the same length >= 3, got {a.shape}, "
                        f"{b.shape}")  # fmt: skip
    if not (np.isfinite(a).all() and np.isfinite(b).all()):  # ranks would place a NaN anywhere
        raise UserError("spearman: the samples hold NaN or infinite values; drop those pairs")
    return float(_pearson_rows(average_ranks(a[None]), average_ranks(b[None]))[0])


def bootstrap_spearman_ci(
    x: Sequence[float],
    y: Sequence[float],
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Spearman's rho of ``x``, ``y`` and its ``level`` percentile-bootstrap interval, resampling
    the pairs (``numpy.random.default_rng(seed)``; deterministic)."""
    if n_boot < 1 or not 0 < level < 1:
        raise UserError(
            f"bootstrap: n_boot must be >= 1 and level in (0, 1), got {n_boot}, {level}"
        )
    rho = spearman(x, y)
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    draws = np.random.default_rng(seed).integers(0, len(a), size=(n_boot, len(a)))
    reps = _pearson_rows(average_ranks(a[draws]), average_ranks(b[draws]))
    reps = reps[~np.isnan(reps)]
    if len(reps) < n_boot / 2:
        return Interval(rho, float("nan"), float("nan"))
    low, high = np.quantile(reps, [(1 - level) / 2, (1 + level) / 2])
    return Interval(rho, float(low), float(high))
