"""Confidence intervals of mean scores (percentile bootstrap, t over seeds) as pure functions.

Scores are per-item values (one per scored document,
:func:`longred_bench.evaluation.items.item_records`). The statistics:

- :func:`bootstrap_mean_ci`: the mean of one sample of items;
- :func:`paired_bootstrap_diff_ci`: ``mean(b - a)`` over items matched by key (the same documents
  scored by two models), resampling the matched pairs;
- :func:`bootstrap_mean_of_means_ci`: a mean of group means of item means (LongReD's Short Avg is
  the mean over categories of the mean over a category's tasks; a RULER average over lengths is the
  mean over lengths of the mean over tasks), resampling items within each innermost sample
  independently;
- :func:`paired_bootstrap_mean_of_means_diff_ci`: the difference ``b - a`` of that statistic, items
  matched by key within each (group, member), the same resampled pairs for both sides;
- :func:`seed_mean_of_means_diff_ci`: the same difference between two rows trained with
  several seeds each, adding the seeds' spread (at t's quantile for their few degrees of
  freedom: a bootstrap over 3 seeds would understate it) to the documents' variance, so the
  interval counts retraining noise (rows trained with the same seeds: over the per-seed
  differences, a paired t);
- :func:`run_step_ratio_ci`: the ratio of two rows' ``sum(values) / sum(weights)`` (seconds per
  token), counting each row's runs (seeds, as above) and, within a single run, its steps;
- :func:`model_document_bootstrap_ci`: any statistic over models measured on shared documents
  (a correlation across models), resampling the models and the documents.

Every function returns an :class:`Interval` ``(estimate, low, high)``: the statistic on the data and
(except the two seed-level intervals, with two or more seeds a side)
the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of its ``n_boot`` bootstrap replicates
(numpy's default linear interpolation). The replicates come from ``numpy.random.default_rng(seed)``
drawn in a fixed order (nested groups in sorted key order), so a call is deterministic. A constant
sample gives a zero-width interval; a paired difference of identical scores is 0 (in the
seed-level intervals, to rounding).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from longred_bench.errors import UserError

Nested = Mapping[str, Mapping[str, Sequence[float]]]
PairedNested = Mapping[str, Mapping[str, Mapping[Hashable, float]]]
_MAX_DRAWS = 1 << 22  # indices drawn per block of resamples


class Interval(NamedTuple):
    """A point estimate and its interval ``[low, high]``."""

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


def _combined_interval(
    estimate: float, spread: float, seed_parts: Sequence[tuple[float, int]], level: float
) -> Interval:
    """``estimate +- sqrt(z**2 * spread + sum(t_df**2 * v))``: ``spread`` a variance known from
    many items (the documents' or steps', taken at the normal quantile ``z``), ``seed_parts``
    ``(v, df)`` pairs, each a side's variance of its mean over its seeds with its degrees of
    freedom ``df = k - 1``, taken at t's quantile for ``df``. Each part's half-width at the
    level, added in quadrature: where one part dominates, the interval is that part's own (a
    normal's for the documents, t's for the seeds); between, it is wider than a single t with
    Welch-Satterthwaite's pooled degrees of freedom, which covers too rarely where few seeds
    vary more than the documents do (about 88% at 95% with 2 seeds against one run, 91% with 3:
    the pooled degrees of freedom grow whenever the seeds happen to agree)."""
    from scipy.stats import norm, t  # imported here: only the reports need it

    q = (1.0 + level) / 2.0
    square = float(norm.ppf(q)) ** 2 * spread
    square += sum(float(t.ppf(q, df)) ** 2 * v for v, df in seed_parts)
    half = math.sqrt(square)
    return Interval(estimate, estimate - half, estimate + half)


def _seed_part(values: np.ndarray) -> list[tuple[float, int]]:
    """``[(var(values) / k, k - 1)]`` for ``k >= 2`` seed values, else nothing."""
    k = values.size
    return [(float(values.var(ddof=1)) / k, k - 1)] if k >= 2 else []


def _interaction(scores: np.ndarray) -> float:
    """The residual mean square of ``scores`` (``[seeds, n]``: one side's runs on shared
    documents) after the seed and document means, with ``(k - 1) (n - 1)`` degrees of freedom:
    an estimate of the seed-by-document variance; 0 with one seed or one document."""
    k, n = scores.shape
    if k < 2 or n < 2:
        return 0.0
    resid = scores - scores.mean(axis=1, keepdims=True) - scores.mean(axis=0) + scores.mean()
    return float((resid * resid).sum()) / ((k - 1) * (n - 1))


def seed_mean_of_means_diff_ci(
    a: Sequence[PairedNested],
    b: Sequence[PairedNested],
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    paired: bool = False,
) -> Interval:
    """Mean over ``b``'s seeds of their mean of means minus the same over ``a``'s seeds, with
    an interval that counts both retraining and document noise.

    ``a`` and ``b`` are lists of runs (one per training seed; one run for a model that was not
    trained, e.g. the original), each mapping group -> member -> {item key: score} with the same
    groups and members. Only item keys every run has count, so every run is scored on the same
    documents and each run's mean of means ``S`` is a seed value on shared documents.

    With one run a side, the interval is the paired document bootstrap of
    :func:`paired_bootstrap_mean_of_means_diff_ci`. With two or more runs on a side it is
    ``estimate +- sqrt(z**2 * V_doc + sum over sides of t_(k-1)**2 * s**2 / k)``
    (:func:`_combined_interval`), with no resampling (``n_boot`` and ``seed`` are not used), so
    no Monte-Carlo noise moves a label:

    - ``s**2``: the sample variance of a side's ``k`` seed values ``S``, with ``k - 1`` degrees
      of freedom (3 seeds: t's 4.30 rather than a normal's 1.96). Scored on the same documents,
      the seed values share the documents' own noise, so it holds what retraining moves (the
      seed effect) and the seed-by-document noise;
    - ``V_doc``: the documents' sampling variance of the seed-averaged difference, ``sum over
      members of w**2 var(d) / n`` (``w`` the member's weight in the mean of means, ``d`` its
      per-document differences of the two sides' seed means over its ``n`` shared documents,
      ``var`` with ``n - 1``; what the paired document bootstrap estimates), less each side's
      seed-by-document share ``I / k``, which ``s**2`` counts already (``I = sum over members of
      w**2 MS / n``, ``MS`` the residual mean square of the member's ``[k, n]`` scores after seed
      and document means, :func:`_interaction`), at least 0. So every source counts once.

    In simulations (true difference 0, 3 or 2 seeds against 1 run or 3, with and without a seed
    effect, Bernoulli and normal scores) this covers 95% to 99% at 95%, where a bootstrap over 3
    seeds covered 77% and a single t with Welch-Satterthwaite degrees of freedom 88% to 97%.
    A member with one shared document adds no document variance.

    ``paired``: run ``i`` of ``a`` and run ``i`` of ``b`` are one seed's (the same ``k >= 2``
    seeds on both sides, e.g. rows that read their data in the same order at each seed). The
    same interval is then computed on the per-seed differences ``b_i - a_i`` as one side of ``k``
    runs (their spread ``s**2`` with ``k - 1`` degrees of freedom, their seed-by-document share),
    which removes what a seed moves in both rows alike: the paired t over seeds, valid whatever
    the two rows share at a seed, as the seeds are independent of each other.

    A side of one run adds no seed variance: right for a model that was not trained, an
    understatement for a row trained once.
    """
    _check(n_boot, level)
    if not a or not b:
        raise UserError("seed interval: each side needs at least one run")
    if paired and not len(a) == len(b) >= 2:
        raise UserError(
            f"seed interval: pairing by seed needs the same 2 or more seeds on both sides; "
            f"got {len(a)} and {len(b)} runs: compare unpaired"
        )
    runs = [*a, *b]
    shape = {g: sorted(m) for g, m in runs[0].items()}
    if any({g: sorted(m) for g, m in r.items()} != shape for r in runs):
        raise UserError(
            "seed interval: the runs have different groups/members; compare the same tasks"
        )
    if not shape:
        raise UserError("mean of means: no groups")
    diffs: dict[str, dict[str, np.ndarray]] = {}  # seed-averaged b - a per shared document
    seed_values = [np.zeros(len(a)), np.zeros(len(b))]  # each run's mean of means (paired:
    # each seed's difference, in the first)
    shared = [0.0, 0.0]  # per side: I, its seed-by-document share of s**2
    doc_var = 0.0  # the documents' sampling variance of the seed-averaged difference
    for g in sorted(shape):
        if not shape[g]:
            raise UserError(f"mean of means: group {g!r} has no members")
        diffs[g] = {}
        for m in shape[g]:
            keys = _shared_keys(runs, g, m)
            if not keys:
                raise UserError(f"{g}/{m}: the runs share no item keys, nothing to pair")
            sides = [
                np.stack([_as_array([float(r[g][m][k]) for k in keys], f"{g}/{m}") for r in side])
                for side in (a, b)
            ]  # [seeds, n] each
            diffs[g][m] = sides[1].mean(axis=0) - sides[0].mean(axis=0)
            w = 1.0 / (len(shape) * len(shape[g]))
            if len(keys) > 1:
                doc_var += w * w * float(diffs[g][m].var(ddof=1)) / len(keys)
            if paired:  # one side: the per-seed differences
                sides = [sides[1] - sides[0]]
            for r, scores in enumerate(sides):
                seed_values[r] += w * scores.mean(axis=1)
                shared[r] += w * w * _interaction(scores) / scores.shape[1]
    if max(len(a), len(b)) < 2:
        return _interval(_mean_of_means(diffs, np.random.default_rng(seed), n_boot), level)
    if paired:
        doc_var -= shared[0] / len(a)
        estimate = float(seed_values[0].mean())
        return _combined_interval(estimate, max(doc_var, 0.0), _seed_part(seed_values[0]), level)
    parts = [*_seed_part(seed_values[0]), *_seed_part(seed_values[1])]
    doc_var -= sum(i / len(side) for i, side in zip(shared, (a, b), strict=True))
    estimate = float(seed_values[1].mean() - seed_values[0].mean())
    return _combined_interval(estimate, max(doc_var, 0.0), parts, level)


class RunSteps(NamedTuple):
    """One run's per-step records: ``values`` and ``weights`` (``[n]`` each, e.g. seconds and
    tokens of each optimizer step) and ``fixed``, an amount added to the run's sum of values
    once (e.g. the seconds of a preliminary run)."""

    values: Sequence[float]
    weights: Sequence[float]
    fixed: float = 0.0


def _side_ratio(
    runs: Sequence[RunSteps], rng: np.random.Generator, n_boot: int
) -> tuple[np.ndarray, np.ndarray]:
    """A side's ratios ``sum(values + fixed) / sum(weights)`` over its runs: ``[1 + n_boot]``, on
    the data first, then with each run's steps resampled (the runs kept); and ``[k]``, each
    run's own ratio."""
    arrays = [(_as_array(r.values, "run steps"), _as_array(r.weights, "run steps"), float(r.fixed))
              for r in runs]  # fmt: skip
    if not all(math.isfinite(f) for _, _, f in arrays):
        raise UserError("run steps: a run's fixed amount must be a finite number")
    if any(v.size != w.size for v, w, _ in arrays):
        raise UserError("run steps: values and weights differ in length")
    if any((w <= 0).any() for _, w, _ in arrays):  # a resample of zero weights divides by 0
        raise UserError("run steps: every step's weight (e.g. its tokens) must be above 0")
    num, den = np.zeros(n_boot + 1), np.zeros(n_boot + 1)
    for v, w, fixed in arrays:
        idx = rng.integers(0, v.size, size=(n_boot, v.size))
        num += np.concatenate([[v.sum()], v[idx].sum(axis=1)]) + fixed
        den += np.concatenate([[w.sum()], w[idx].sum(axis=1)])
    own = np.array([(v.sum() + f) / w.sum() for v, w, f in arrays])
    return num / den, own


def run_step_ratio_ci(
    a: Sequence[RunSteps],
    b: Sequence[RunSteps],
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> Interval:
    """``r(b) / r(a)``, where a side's ``r`` is ``sum(values + fixed) / sum(weights)`` over its
    runs (seconds per token, with the steps' seconds and tokens), with an interval that counts
    the runs (seeds) and their steps.

    With one run a side, the interval is the percentile bootstrap of the ratio over each run's
    steps. With two or more runs on a side it is an interval on ``log r(b) - log r(a)``, mapped
    back by ``exp``: a side of ``k >= 2`` runs contributes the sample variance of its runs' own
    ``log r`` over ``k`` (which holds the steps' noise: runs share no steps) at t's quantile for
    ``k - 1`` degrees of freedom, a side of one run the variance of its step bootstrap of ``log r``
    at a normal's, added in quadrature (:func:`_combined_interval`, as
    :func:`seed_mean_of_means_diff_ci` combines them). The estimate is the ratio of the
    pooled sums; the runs' spread is that of their own rates, which stands for the pooled one's
    where the runs' weights (tokens) are about equal, as every row's runs here are. A run
    recorded only as a total is one step: one such run gives a side no spread."""
    _check(n_boot, level)
    if not a or not b:
        raise UserError("run step ratio: each side needs at least one run")
    rng = np.random.default_rng(seed)
    (ra, own_a), (rb, own_b) = _side_ratio(a, rng, n_boot), _side_ratio(b, rng, n_boot)
    if (ra <= 0).any():
        raise UserError("run step ratio: the reference side's ratio must be positive")
    if len(a) == 1 and len(b) == 1:
        return _interval(rb / ra, level)
    if (rb <= 0).any() or (own_a <= 0).any() or (own_b <= 0).any():
        raise UserError("run step ratio: every run's ratio must be positive to compare runs")
    if n_boot < 2 and min(len(a), len(b)) == 1:
        raise UserError("run step ratio: n_boot must be at least 2 to resample a run's steps")
    spread, parts = 0.0, []
    for pooled, own in ((ra, own_a), (rb, own_b)):
        if own.size >= 2:
            parts += _seed_part(np.log(own))
        else:
            spread += float(np.log(pooled[1:]).var(ddof=1))
    log_ci = _combined_interval(float(np.log(rb[0] / ra[0])), spread, parts, level)
    return Interval(float(rb[0] / ra[0]), math.exp(log_ci.low), math.exp(log_ci.high))


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
    :func:`seed_mean_of_means_diff_ci`).

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
