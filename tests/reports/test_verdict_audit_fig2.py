"""Figure 2's interval of rho (:func:`~longred_bench.reports.fig2_report.rho_interval`) at what
the other Figure 2 tests leave open: each replicate resamples the drift texts, and retention is
Short Avg's, the mean of the category means (not of the tasks)."""

from __future__ import annotations

import pytest

from longred_bench.metrics.stats import Interval
from longred_bench.reports.fig2_report import Point, rho_interval

MODELS = 12


def _docs(score: float) -> dict[int, float]:
    return {d: score for d in range(20)}


def _point(i: int, items: dict, texts: dict[int, float] | None = None) -> Point:
    similarity = 0.8 + 0.001 * i
    return Point("cpt", f"abf:theta={i + 2}e6", Interval(similarity, similarity, similarity),
                 0.0, 0.0, texts, items)  # fmt: skip


def test_each_replicate_resamples_the_drift_texts() -> None:
    """Every model's mean similarity rises with its index (rho +1 on the data), but its 10 texts
    scatter far more than the means differ: an interval that resamples them reaches well below
    +1; with no per-text values the means stay fixed and it does not."""
    offsets = [0.02 * (k - 4.5) for k in range(10)]  # mean 0

    def texts(i: int) -> dict[int, float]:
        return {j: 0.8 + 0.001 * i + offsets[(3 * i + j) % 10] for j in range(10)}

    original = {"General": {"t": _docs(0.8)}}
    items = lambda i: {"General": {"t": _docs(0.5 + 0.02 * i)}}  # noqa: E731
    ci, how = rho_interval([_point(i, items(i), texts(i)) for i in range(MODELS)], original)
    assert ci.estimate == pytest.approx(1.0)
    assert ci.low < 0.8 and "the 10 drift texts" in how
    fixed, _ = rho_interval([_point(i, items(i)) for i in range(MODELS)], original)
    assert fixed.low > 0.9


def test_retention_is_the_mean_of_category_means() -> None:
    """Category A (one task) rises with the model's index, category B (three tasks) falls
    more slowly: the mean of the two category means rises, as similarity does (rho +1); the mean
    over the four tasks would fall (rho -1)."""

    def items(a: float, b: float) -> dict:
        return {"A": {"a": _docs(a)}, "B": {t: _docs(b) for t in ("b1", "b2", "b3")}}

    points = [_point(i, items(0.04 * i, 0.5 - 0.015 * i)) for i in range(MODELS)]
    ci, _ = rho_interval(points, items(0.5, 0.5))
    assert ci.estimate == pytest.approx(1.0)
    assert ci.low > 0.9
