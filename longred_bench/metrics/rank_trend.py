"""A rank trend over settings measured on the same items: Spearman's rho of each setting's value
(e.g. a RoPE base) against its mean over the items (e.g. drift per text), with a percentile
bootstrap interval that resamples the items (the same draw for every setting, so the settings
stay paired), as a pure function."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from longred_bench.errors import UserError
from longred_bench.metrics.correlation import _pearson_rows, average_ranks
from longred_bench.metrics.stats import Interval


def bootstrap_rank_trend_ci(
    settings: Sequence[float],
    values: Sequence[Sequence[float]],
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Spearman's rho of ``settings`` (``[k]``, k >= 3) against the item means of ``values``
    (``[k, n]``: each setting's value on the same ``n`` items) and its ``level`` interval over
    ``n_boot`` resamples of the items. A resample whose means tie everywhere has no rho and is
    dropped; with fewer than half left the interval is ``nan``. Non-finite values are refused
    (ranks would place a NaN anywhere), as :func:`longred_bench.metrics.correlation.spearman`
    refuses them."""
    x = np.asarray(settings, dtype=float)
    v = np.asarray(values, dtype=float)
    if x.ndim != 1 or len(x) < 3 or v.ndim != 2 or v.shape[0] != len(x) or v.shape[1] < 1:
        raise UserError(f"rank trend: need k >= 3 settings and a [k, n] array of values, got "
                        f"{x.shape} and {v.shape}")  # fmt: skip
    if n_boot < 1 or not 0 < level < 1:
        raise UserError(f"bootstrap: n_boot must be >= 1 and level in (0, 1), got {n_boot}, "
                        f"{level}")  # fmt: skip
    if not (np.isfinite(x).all() and np.isfinite(v).all()):  # ranks would place a NaN anywhere
        raise UserError("rank trend: the settings or values hold NaN or infinite values; drop "
                        "those items")  # fmt: skip
    x_ranks = average_ranks(x[None])
    rho = float(_pearson_rows(x_ranks, average_ranks(v.mean(axis=1)[None]))[0])
    draws = np.random.default_rng(seed).integers(0, v.shape[1], size=(n_boot, v.shape[1]))
    means = v[:, draws].mean(axis=-1).T  # [n_boot, k]
    reps = _pearson_rows(np.broadcast_to(x_ranks, means.shape), average_ranks(means))
    reps = reps[~np.isnan(reps)]
    if len(reps) < n_boot / 2:
        return Interval(rho, float("nan"), float("nan"))
    low, high = np.quantile(reps, [(1 - level) / 2, (1 + level) / 2])
    return Interval(rho, float(low), float(high))
