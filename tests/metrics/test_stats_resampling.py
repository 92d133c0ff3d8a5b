"""The resampling of runs and steps (:func:`run_step_ratio_ci`) and of models and shared
documents (:func:`model_document_bootstrap_ci`): estimates, what each level adds to the interval,
determinism and the NaN rule."""

from __future__ import annotations

import numpy as np
import pytest

from longred_bench.errors import UserError
from longred_bench.metrics.correlation import bootstrap_spearman_ci, spearman
from longred_bench.metrics.stats import RunSteps, model_document_bootstrap_ci, run_step_ratio_ci


def test_run_step_ratio_is_a_ratio_of_sums_with_the_fixed_amount_once() -> None:
    a = [RunSteps([1.0, 1.0], [10.0, 10.0]), RunSteps([2.0, 2.0], [10.0, 10.0])]  # 6 s / 40
    b = [RunSteps([1.0, 1.0], [10.0, 10.0], fixed=1.0)]  # 3 s / 20
    ci = run_step_ratio_ci(a, b)
    assert ci.estimate == pytest.approx((3 / 20) / (6 / 40))
    # b's steps are constant and a's two runs differ: only a's runs widen the interval.
    assert ci.low < ci.estimate < ci.high
    steady = run_step_ratio_ci([RunSteps([1.0] * 5, [10.0] * 5)], b)
    assert steady.low == steady.high == pytest.approx(1.5)


def test_run_step_ratio_counts_the_noise_of_steps_and_of_runs() -> None:
    rng = np.random.default_rng(0)
    ref = [RunSteps([1.0] * 32, [1.0] * 32)]
    steps = [RunSteps(list(1 + 0.3 * rng.standard_normal(32)), [1.0] * 32)]
    runs = [RunSteps([v] * 32, [1.0] * 32) for v in (0.8, 1.0, 1.2)]
    width = [run_step_ratio_ci(ref, b).high - run_step_ratio_ci(ref, b).low for b in (steps, runs)]
    assert width[0] > 0.1 and width[1] > 0.1
    assert run_step_ratio_ci(ref, runs, seed=3) == run_step_ratio_ci(ref, runs, seed=3)
    with pytest.raises(UserError, match="differ in length"):
        run_step_ratio_ci(ref, [RunSteps([1.0], [1.0, 2.0])])
    with pytest.raises(UserError, match="at least one run"):
        run_step_ratio_ci([], ref)


def _spearman_stat(x: np.ndarray, y: np.ndarray):
    """Spearman's rho of per-model means over the drawn documents; x, y: [models, documents]."""

    def statistic(models: np.ndarray, docs: list[np.ndarray]) -> float:
        return spearman(x[models][:, docs[0]].mean(1), y[models][:, docs[1]].mean(1))

    return statistic


def test_model_document_bootstrap_adds_the_document_noise() -> None:
    rng = np.random.default_rng(0)
    truth = np.linspace(0.0, 1.0, 12)
    x = truth[:, None] + 0.02 * rng.standard_normal((12, 40))
    y = truth[:, None] + 1.5 * rng.standard_normal((12, 40))  # noisy documents
    both = model_document_bootstrap_ci(_spearman_stat(x, y), 12, [40, 40], n_boot=500)
    models = bootstrap_spearman_ci(x.mean(1), y.mean(1), n_boot=500)
    assert both.estimate == pytest.approx(models.estimate)
    assert both.high - both.low > models.high - models.low  # documents add their noise
    again = model_document_bootstrap_ci(_spearman_stat(x, y), 12, [40, 40], n_boot=500)
    assert again == both


def test_model_document_bootstrap_drops_nan_replicates() -> None:
    flat = np.ones((5, 3))
    ci = model_document_bootstrap_ci(_spearman_stat(flat, flat), 5, [3, 3], n_boot=50)
    assert np.isnan(ci.estimate) and np.isnan(ci.low) and np.isnan(ci.high)
    with pytest.raises(UserError, match="at least one member"):
        model_document_bootstrap_ci(_spearman_stat(flat, flat), 5, [0], n_boot=50)


@pytest.mark.parametrize("weights", [[10.0, 0.0], [0.0, 0.0], [10.0, -1.0]])
def test_run_step_ratio_refuses_steps_without_weight(weights) -> None:
    """A step of zero tokens made a resample divide by zero: an interval (0, 0, 0) or
    (inf, nan, nan) with warnings, not an error."""
    good = [RunSteps([1.0, 1.0], [10.0, 10.0])]
    with pytest.raises(UserError, match="must be above 0"):
        run_step_ratio_ci(good, [RunSteps([1.0, 1.0], weights)])
    with pytest.raises(UserError, match="must be above 0"):
        run_step_ratio_ci([RunSteps([1.0, 1.0], weights)], good)
