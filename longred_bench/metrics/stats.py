"""Percentile-bootstrap confidence intervals of mean scores, plain and paired, as pure functions.

Scores are per-item values (one per scored document,
:func:`longred_bench.evaluation.items.item_records`). Four statistics:

- :func:`bootstrap_mean_ci`: the mean of one sample of items;
- :func:`paired_bootstrap_diff_ci`: ``mean(b - a)`` over items matched by key (the same documents
  scored by two models), resampling the matched pairs;
- :func:`bootstrap_mean_of_means_ci`: a mean of group means of item means (LongReD's Short Avg is
  the mean over categories of the mean over a category's tasks; a RULER average over lengths is the
  mean over lengths of the mean over tasks), resampling items within each innermost sample
  independently;
- :func:`paired_bootstrap_mean_of_means_diff_ci`: the difference ``b - a`` of that statistic, items
  matched by key within each (group, member), the same resampled pairs for both sides;
- :func:`seed_bootstrap_mean_of_means_diff_ci`: the same difference between two rows trained with
  several seeds each, resampling seeds as well as documents, so the interval counts retraining
  noise;
- :func:`run_step_ratio_ci`: the ratio of two rows' ``sum(values) / sum(weights)`` (seconds per
  token), resampling each row's runs and, within each run, its steps;
- :func:`model_document_bootstrap_ci`: any statistic over models measured on shared documents
  (a correlation across models), resampling the models and the documents.

Every function returns an :class:`Interval` ``(estimate, low, high)``: the statistic on the data and
the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of its ``n_boot`` bootstrap replicates
(numpy's default linear interpolation). The replicates come from ``numpy.random.default_rng(seed)``
drawn in a fixed order (nested groups in sorted key order), so a call is deterministic. A constant
sample gives a zero-width interval; a paired difference of identical scores is exactly 0.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from longred_bench.errors import UserError

Nested = Mapping[str, Mapping[str, Sequence[float]]]
PairedNested = Mapping[str, Mapping[str, Mapping[Hashable, float]]]
_MAX_DRAWS = 1 << 22  # indices drawn per block of resamples


class Interval(NamedTuple):
    """A point estimate and its percentile-bootstrap interval ``[low, high]``."""

    estimate: float
    low: float
    high: float


def _check(n_boot: int, level: float) -> None:
    if isinstance(n_boot, bool) or not isinstance(n_boot, numbers.Integral):
        raise UserError(f"n_boot must be a whole number of resamples, got {n_boot!r}")
    if n_boot < 1:
        raise UserError(f"n_boot must be at least 1, got {n_boot}")
    if not 0.0 < level < 1.0:
        raise UserError(f"level must lie strictly between 0 and 1, got {level}")


def _as_array(values: Sequence[float], what: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    if arr.size == 0:
        raise UserError(f"{what}: no values to bootstrap")
    if not np.isfinite(arr).all():
        raise UserError(f"{what}: values must be finite numbers (found NaN or inf)")
    return arr


def _replicate_means(arr: np.ndarray, rng: np.random.Generator, n_boot: int) -> np.ndarray:
    """``[1 + n_boot]`` means of ``arr`` (``[n]``): the data's own mean first, then the means of
    ``n_boot`` resamples with replacement. Both come from the same reduction, so a constant
    sample gives bit-identical values."""
    out = np.empty(n_boot + 1, dtype=np.float64)
    out[0] = arr[np.arange(arr.size)[None, :]].mean(axis=1)[0]
    rows = max(1, _MAX_DRAWS // arr.size)  # resamples per block, to bound memory
    for start in range(1, n_boot + 1, rows):
        stop = min(start + rows, n_boot + 1)
        idx = rng.integers(0, arr.size, size=(stop - start, arr.size))
        out[start:stop] = arr[idx].mean(axis=1)
    return out


def _interval(stats: np.ndarray, level: float) -> Interval:
    """``stats``: ``[1 + n_boot]``, the statistic on the data first, then its replicates."""
    low, high = np.quantile(stats[1:], [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return Interval(float(stats[0]), float(low), float(high))


def bootstrap_mean_ci(
    values: Sequence[float], *, n_boot: int = 2000, level: float = 0.95, seed: int = 0
) -> Interval:
    """Mean of ``values`` (``[n]``) and its ``level`` percentile-bootstrap interval."""
    _check(n_boot, level)
    arr = _as_array(values, "bootstrap_mean_ci")
    return _interval(_replicate_means(arr, np.random.default_rng(seed), n_boot), level)


def bootstrap_diff_ci(
    a: Sequence[float],
    b: Sequence[float],
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> Interval:
    """``mean(b) - mean(a)`` of two independent samples (``[n_a]``, ``[n_b]``: nothing pairs
    their items) and its percentile-bootstrap interval, each sample resampled on its own."""
    _check(n_boot, level)
    rng = np.random.default_rng(seed)
    first = _replicate_means(_as_array(a, "bootstrap_diff_ci"), rng, n_boot)
    second = _replicate_means(_as_array(b, "bootstrap_diff_ci"), rng, n_boot)
    return _interval(second - first, level)


def matched_keys(a: Mapping[Hashable, float], b: Mapping[Hashable, float]) -> list[Hashable]:
    """The keys present in both ``a`` and ``b``, sorted (by ``repr`` when not comparable)."""
    common = set(a) & set(b)
    try:
        return sorted(common)  # type: ignore[type-var]
    except TypeError:
        return sorted(common, key=repr)


def _paired_diffs(
    a: Mapping[Hashable, float], b: Mapping[Hashable, float], what: str
) -> np.ndarray:
    keys = matched_keys(a, b)
    if not keys:
        raise UserError(f"{what}: the two sides share no item keys, nothing to pair")
    return _as_array([float(b[k]) - float(a[k]) for k in keys], what)


def paired_bootstrap_diff_ci(
    a: Mapping[Hashable, float],
    b: Mapping[Hashable, float],
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> Interval:
    """``mean(b[k] - a[k])`` over the keys in both mappings, with its paired bootstrap interval.

    Keys present on one side only (documents one model skipped) are left out; the number of
    pairs used is ``len(matched_keys(a, b))``.
    """
    _check(n_boot, level)
    diffs = _paired_diffs(a, b, "paired_bootstrap_diff_ci")
    return _interval(_replicate_means(diffs, np.random.default_rng(seed), n_boot), level)


def _mean_of_means(
    groups: Mapping[str, Mapping[str, np.ndarray]], rng: np.random.Generator, n_boot: int
) -> np.ndarray:
    """``[1 + n_boot]`` means of group means: on the data first, then the replicates."""
    if not groups:
        raise UserError("mean of means: no groups")
    per_group = []
    for group in sorted(groups):
        members = groups[group]
        if not members:
            raise UserError(f"mean of means: group {group!r} has no members")
        per_member = [_replicate_means(members[m], rng, n_boot) for m in sorted(members)]
        per_group.append(np.mean(per_member, axis=0))
    return np.mean(per_group, axis=0)


def bootstrap_mean_of_means_ci(
    groups: Nested, *, n_boot: int = 2000, level: float = 0.95, seed: int = 0
) -> Interval:
    """``mean_g mean_{m in g} mean(groups[g][m])`` and its bootstrap interval.

    ``groups`` maps a group (a category, a length) to its members (tasks), each a sample of item
    scores; every member counts once in its group and every group once in the total, whatever
    their sizes. Items are resampled within each member, independently across members.
    """
    _check(n_boot, level)
    arrays = {
        g: {m: _as_array(v, f"{g}/{m}") for m, v in members.items()}
        for g, members in groups.items()
    }
    return _interval(_mean_of_means(arrays, np.random.default_rng(seed), n_boot), level)


def paired_bootstrap_mean_of_means_diff_ci(
    a: PairedNested,
    b: PairedNested,
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Mean of means of ``b`` minus that of ``a``, items paired by key within each member.

    ``a`` and ``b`` map group -> member -> {item key: score}, with the same groups and members
    (a ``UserError`` names any difference). Only keys present on both sides count; since the
    statistic is linear, its difference is the mean of means of the per-item differences, which
    are resampled as pairs within each member.
    """
    _check(n_boot, level)
    shape_a = {g: sorted(m) for g, m in a.items()}
    shape_b = {g: sorted(m) for g, m in b.items()}
    if shape_a != shape_b:
        raise UserError(
            f"paired mean of means: the sides have different groups/members ({shape_a} vs "
            f"{shape_b}); compare the same tasks"
        )
    diffs = {
        g: {m: _paired_diffs(a[g][m], b[g][m], f"{g}/{m}") for m in members}
        for g, members in a.items()
    }
    return _interval(_mean_of_means(diffs, np.random.default_rng(seed), n_boot), level)


def _shared_keys(sides: Sequence[PairedNested], g: str, m: str) -> list[Hashable]:
    common = set.intersection(*(set(side[g][m]) for side in sides))
    try:
        return sorted(common)  # type: ignore[type-var]
    except TypeError:
        return sorted(common, key=repr)


def seed_bootstrap_mean_of_means_diff_ci(
    a: Sequence[PairedNested],
    b: Sequence[PairedNested],
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Mean over ``b``'s seeds of their mean of means minus the same over ``a``'s seeds, with
    an interval that counts both retraining and document noise.

    ``a`` and ``b`` are lists of runs (one per training seed; one run for a model that was not
    trained, e.g. the original), each mapping group -> member -> {item key: score} with the same
    groups and members. Only item keys every run has count. Each replicate resamples the seeds
    of each side with replacement (a seed is one whole model: the same draw for every member)
    and the documents of each member with replacement (the same documents for every run, so
    the comparison stays paired). With one seed per side it is the paired document bootstrap
    of :func:`paired_bootstrap_mean_of_means_diff_ci`; seeds that disagree widen the interval.
    """
    _check(n_boot, level)
    if not a or not b:
        raise UserError("seed bootstrap: each side needs at least one run")
    runs = [*a, *b]
    shape = {g: sorted(m) for g, m in runs[0].items()}
    if any({g: sorted(m) for g, m in r.items()} != shape for r in runs):
        raise UserError(
            "seed bootstrap: the runs have different groups/members; compare the same tasks"
        )
    if not shape:
        raise UserError("mean of means: no groups")
    rng = np.random.default_rng(seed)
    weights = []  # per side: [1 + n_boot, seeds], the data's (uniform) weights first
    for side in (a, b):
        counts = np.zeros((n_boot + 1, len(side)))
        counts[0] = 1.0
        draws = rng.integers(0, len(side), size=(n_boot, len(side)))
        np.add.at(counts, (np.arange(1, n_boot + 1)[:, None], draws), 1.0)
        weights.append(counts / len(side))
    per_group = []
    for g in sorted(shape):
        if not shape[g]:
            raise UserError(f"mean of means: group {g!r} has no members")
        per_member = []
        for m in shape[g]:
            keys = _shared_keys(runs, g, m)
            if not keys:
                raise UserError(f"{g}/{m}: the runs share no item keys, nothing to pair")
            sides = [
                np.stack([_as_array([float(r[g][m][k]) for k in keys], f"{g}/{m}") for r in side])
                for side in (a, b)
            ]  # [seeds, n] each
            n = len(keys)
            rows = max(1, _MAX_DRAWS // (n * len(runs)))
            means = [np.empty((len(s), n_boot + 1)) for s in sides]  # per-seed resampled means
            for k, s in enumerate(sides):
                means[k][:, 0] = s.mean(axis=1)
            for start in range(1, n_boot + 1, rows):
                stop = min(start + rows, n_boot + 1)
                idx = rng.integers(0, n, size=(stop - start, n))
                for k, s in enumerate(sides):
                    means[k][:, start:stop] = s[:, idx].mean(axis=2)
            stat = (weights[1] * means[1].T).sum(axis=1) - (weights[0] * means[0].T).sum(axis=1)
            per_member.append(stat)
        per_group.append(np.mean(per_member, axis=0))
    return _interval(np.mean(per_group, axis=0), level)


class RunSteps(NamedTuple):
    """One run's per-step records: ``values`` and ``weights`` (``[n]`` each, e.g. seconds and
    tokens of each optimizer step) and ``fixed``, an amount added to the run's sum of values
    once (e.g. the seconds of a preliminary run)."""

    values: Sequence[float]
    weights: Sequence[float]
    fixed: float = 0.0


def _side_ratio(runs: Sequence[RunSteps], rng: np.random.Generator, n_boot: int) -> np.ndarray:
    """``[1 + n_boot]`` ratios ``sum(values + fixed) / sum(weights)`` over a side's runs: on the
    data first, then on resamples of the runs and, within each drawn run, of its steps."""
    k = len(runs)
    arrays = [(_as_array(r.values, "run steps"), _as_array(r.weights, "run steps"), float(r.fixed))
              for r in runs]  # fmt: skip
    if any(v.size != w.size for v, w, _ in arrays):
        raise UserError("run steps: values and weights differ in length")
    if any((w <= 0).any() for _, w, _ in arrays):  # a resample of zero weights divides by 0
        raise UserError("run steps: every step's weight (e.g. its tokens) must be above 0")
    num = np.empty((k, n_boot, k))  # [run, replicate, draw position]: that run's resampled sums
    den = np.empty((k, n_boot, k))
    for i, (v, w, fixed) in enumerate(arrays):
        idx = rng.integers(0, v.size, size=(n_boot, k, v.size))
        num[i] = v[idx].sum(axis=2) + fixed
        den[i] = w[idx].sum(axis=2)
    draws = rng.integers(0, k, size=(n_boot, k))  # the runs each replicate draws
    rows, cols = np.arange(n_boot)[:, None], np.arange(k)[None, :]
    out = np.empty(n_boot + 1)
    out[0] = sum(v.sum() + f for v, _, f in arrays) / sum(w.sum() for _, w, _ in arrays)
    out[1:] = num[draws, rows, cols].sum(axis=1) / den[draws, rows, cols].sum(axis=1)
    return out


def run_step_ratio_ci(
    a: Sequence[RunSteps],
    b: Sequence[RunSteps],
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> Interval:
    """``r(b) / r(a)``, where a side's ``r`` is ``sum(values + fixed) / sum(weights)`` over its
    runs (seconds per token, with the steps' seconds and tokens), with an interval resampling
    each side's runs (seeds) with replacement and, within each drawn run, its steps. A run
    recorded only as a total is one step: with one such run a side has no spread."""
    _check(n_boot, level)
    if not a or not b:
        raise UserError("run step ratio: each side needs at least one run")
    rng = np.random.default_rng(seed)
    ra, rb = _side_ratio(a, rng, n_boot), _side_ratio(b, rng, n_boot)
    if (ra <= 0).any():
        raise UserError("run step ratio: the reference side's ratio must be positive")
    return _interval(rb / ra, level)


def model_document_bootstrap_ci(
    statistic: Callable[[np.ndarray, Sequence[np.ndarray]], float],
    n_models: int,
    n_documents: Sequence[int],
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> Interval:
    """A statistic over models, each measured on documents, with an interval that resamples
    both: ``statistic(models, documents)`` on the data (``models`` = ``arange(n_models)``, each
    block's documents ``arange(n)``), and on ``n_boot`` replicates, each drawing the models
    (``[n_models]`` indices) with replacement and, independently, the documents of every block
    (``n_documents``: one count per block, e.g. the texts of one measurement and the documents of
    each task) with replacement. Every model scored the same documents, so one draw of a block's
    documents serves every model, keeping their comparison paired (as in
    :func:`seed_bootstrap_mean_of_means_diff_ci`).

    A replicate whose statistic is NaN (a correlation with one side constant) is dropped; with
    fewer than half of them left the interval is NaN."""
    _check(n_boot, level)
    if n_models < 1 or any(n < 1 for n in n_documents):
        raise UserError("model/document bootstrap: every level needs at least one member")
    rng = np.random.default_rng(seed)
    stats = np.empty(n_boot + 1)
    stats[0] = statistic(np.arange(n_models), [np.arange(n) for n in n_documents])
    for i in range(1, n_boot + 1):
        models = rng.integers(0, n_models, size=n_models)
        stats[i] = statistic(models, [rng.integers(0, n, size=n) for n in n_documents])
    reps = stats[1:][~np.isnan(stats[1:])]
    if len(reps) < n_boot / 2:
        return Interval(float(stats[0]), float("nan"), float("nan"))
    return _interval(np.concatenate([stats[:1], reps]), level)
