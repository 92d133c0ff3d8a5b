"""The intervals and seed spreads behind the verdict rules of :mod:`longred_bench.reports.verdicts`.

A :class:`RunScores` is one evaluated model as the rules see it. Every comparison of two rows is
made over the documents both scored (every seed of both rows, for :func:`seed_diff`), never over
two different document sets: :func:`~longred_bench.metrics.retention.common_documents` cuts
nested per-document scores to their shared keys, :func:`paired_diff` and :func:`seed_diff` give
the interval of a difference and the number ``n`` of documents behind it, and
:func:`seed_spread` is the spread of one row's score over its seeds, on the documents all those
seeds scored.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

from longred_bench.metrics.retention import common_documents, mean_of_means
from longred_bench.metrics.stats import (
    Interval,
    paired_bootstrap_mean_of_means_diff_ci,
    seed_mean_of_means_diff_ci,
)

LEVEL = 0.95
N_BOOT = 2000
BOOT_SEED = 0
SEED_INTERVALS = (
    "a difference between rows, each the mean over its seeds, has an interval over seeds and "
    "paired documents: with 2 or more seeds on a side, its half-width is sqrt(z^2 V + the sum "
    "over rows of t(k - 1)^2 s^2 / k), V the documents' sampling variance of the seed-averaged "
    "difference less the seed-by-document share the seeds count, s^2 the variance of a row's k "
    "seed means (rows trained with the same seeds: one term, over the k per-seed differences); "
    "no resampling; with one run a side, the percentiles of the paired documents' bootstrap"
)  # what :func:`~longred_bench.metrics.stats.seed_mean_of_means_diff_ci` applies
RUN_INTERVALS = (
    "a ratio of two rows' seconds per token has an interval over runs and steps: with 2 or more "
    "runs on a side, on the log of the ratio, a row of k runs contributing t(k - 1)^2 x the "
    "variance of its runs' own log rates / k, a row of one run z^2 x that of its steps' "
    "bootstrap, in quadrature; with one run a side, the percentiles of the steps' bootstrap"
)  # what :func:`~longred_bench.metrics.stats.run_step_ratio_ci` applies

Items = dict[Hashable, dict[Hashable, dict[Hashable, float]]]


@dataclass(frozen=True)
class RunScores:
    """One evaluated model: scores on a 0-100 scale.

    ``short`` maps category -> task -> doc_id -> score and ``ruler`` task -> length -> doc_id ->
    score (empty without per-document records); ``short_avg`` and ``ruler_avg`` are the tidy
    records' values (``None`` where not evaluated).
    """

    extension: str | None
    row: str
    seed: int
    short_avg: float | None
    ruler_avg: float | None
    short: Items = field(default_factory=dict)
    ruler: Items = field(default_factory=dict)


def shared_means(a: Items, b: Items) -> tuple[float | None, float | None]:
    """Each side's mean of means on the documents both scored: the two values whose difference
    is :func:`paired_diff`'s estimate; ``(None, None)`` when they share none."""
    (ca, cb), n = common_documents(a, b)
    return (mean_of_means(ca), mean_of_means(cb)) if n else (None, None)


def _resamples(cuts: Sequence[Items], seeds: int = 1) -> bool:
    """Whether a bootstrap over ``cuts`` (per-document scores cut to the shared documents) has
    anything to resample: two or more seeds on a side, or a task with two or more documents.
    Without either every replicate is the estimate, a zero-width interval that only looks sure."""
    if seeds > 1:
        return True
    return any(len(docs) > 1 for cut in cuts for members in cut.values()
               for docs in members.values())  # fmt: skip


def no_interval_text(n: int, scores: str) -> str:
    """Why :func:`paired_diff` or :func:`seed_diff` gave no interval over ``n`` shared
    documents: none shared, or one per task and seed (nothing to resample). ``scores`` names
    them (``per-document``, ``per-sample RULER``)."""
    if n == 0:
        return f"no {scores} scores to pair"
    return (
        f"{n} paired {scores} score(s), one per task (and length) and seed: nothing to "
        "resample, no interval"
    )


def paired_diff(a: Items, b: Items) -> tuple[Interval | None, int]:
    """Paired interval of mean-of-means(b) - mean-of-means(a) over shared items, and n pairs.

    ``None`` (and 0) when the two share no scored document; ``None`` (and ``n``) when no task
    has two shared documents to resample (:func:`no_interval_text` says which).
    """
    (ca, cb), n = common_documents(a, b)
    if n == 0 or not _resamples([ca]):
        return None, n
    return paired_bootstrap_mean_of_means_diff_ci(
        ca, cb, n_boot=N_BOOT, level=LEVEL, seed=BOOT_SEED
    ), n


def seed_diff(
    a: Sequence[RunScores], b: Sequence[RunScores], what: str
) -> tuple[Interval | None, int]:
    """Interval of the mean over ``b``'s seeds minus the mean over ``a``'s of the ``what``
    (``short`` or ``ruler``) mean of means, over seeds and paired documents
    (:func:`~longred_bench.metrics.stats.seed_mean_of_means_diff_ci`), over the
    documents every run scored; and the number of those documents. Rows trained with the same
    two or more seeds (:func:`paired_by_seed`) are compared seed by seed. ``None`` (and 0) when
    the runs share no scored document; ``None`` (and ``n``) when each side has one seed and no
    task two shared documents (nothing to resample: :func:`no_interval_text`)."""
    paired = paired_by_seed([r.seed for r in a], [r.seed for r in b])
    if paired:
        a, b = (sorted(side, key=lambda r: r.seed) for side in (a, b))
    cuts, n = common_documents(*(getattr(r, what) for r in [*a, *b]))
    if n == 0 or not _resamples(cuts, max(len(a), len(b))):
        return None, n
    ci = seed_mean_of_means_diff_ci(
        cuts[: len(a)], cuts[len(a) :], n_boot=N_BOOT, level=LEVEL, seed=BOOT_SEED,
        paired=paired,
    )  # fmt: skip
    return ci, n


def paired_by_seed(a: Sequence[int], b: Sequence[int]) -> bool:
    """Whether two rows trained with seeds ``a`` and ``b`` compare seed by seed: the same two or
    more distinct seeds. What a seed draws for both rows (their data, its order) then cancels
    in the per-seed differences; the pairing is valid whatever they share, as the seeds are
    independent of each other."""
    return len(a) >= 2 and len(set(a)) == len(a) and sorted(a) == sorted(b)


def compared_means(
    a: Sequence[RunScores], b: Sequence[RunScores], what: str
) -> tuple[float | None, float | None]:
    """Each side's ``what`` (``short`` or ``ruler``) mean of means on the documents every run of
    both sides scored, averaged over its seeds: the two values whose difference is the estimate
    of :func:`seed_diff`. Without shared per-document scores, the tidy averages over seeds."""
    cuts, n = common_documents(*(getattr(r, what) for r in [*a, *b]))
    if n == 0:
        return mean_over_seeds(a, f"{what}_avg"), mean_over_seeds(b, f"{what}_avg")
    means = [mean_of_means(c) for c in cuts]
    return sum(means[: len(a)]) / len(a), sum(means[len(a) :]) / len(b)


def mean_over_seeds(runs: Sequence[RunScores], what: str) -> float | None:
    """Mean of the tidy ``what`` (``short_avg`` or ``ruler_avg``) over the runs that have it."""
    values = [getattr(r, what) for r in runs if getattr(r, what) is not None]
    return sum(values) / len(values) if values else None


def seed_spread(runs: Sequence[RunScores], what: str = "short") -> float | None:
    """``max - min`` over the seeds of one row of its ``what`` (``short``: Short Avg, ``ruler``:
    RULER average); ``None`` with fewer than 2 seeds.

    With per-document scores on every seed, each seed's score is the mean of means over the
    documents all the seeds scored; otherwise the tidy values (``short_avg``/``ruler_avg``).
    """
    if len(runs) < 2:
        return None
    cuts, n = common_documents(*(getattr(r, what) for r in runs))
    if n:
        values = [mean_of_means(c) for c in cuts]
    else:
        tidy = [getattr(r, f"{what}_avg") for r in runs]
        values = [v for v in tidy if v is not None]
    if len(values) < 2:
        return None
    return max(values) - min(values)


def seeds_note(runs: Sequence[RunScores]) -> str:
    """`` (mean of k seeds)`` for a row of k >= 2 seeds, else nothing."""
    return "" if len(runs) < 2 else f" (mean of {len(runs)} seeds)"


def spread_text(spreads: Mapping[str, float | None], what: str = "Short Avg") -> str:
    """`` Seed spread (what, max - min): `row` x, ...`` for the rows with a spread."""
    known = [f"`{row}` {s:.2f}" for row, s in spreads.items() if s is not None]
    return f" Seed spread ({what}, max - min): {', '.join(known)}." if known else ""
