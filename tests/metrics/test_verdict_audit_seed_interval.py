"""The seed-level intervals (:func:`~longred_bench.metrics.stats.seed_mean_of_means_diff_ci`,
:func:`~longred_bench.metrics.stats.run_step_ratio_ci`) at the edges their other tests leave
open: the documents' variance, less the seed-by-document share the seeds count, floors at 0
(paired and unpaired); a member with one shared document adds no document variance; the share
weighs as the documents do; a side of two runs takes t over them, each run's rate counting its
fixed seconds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm
from scipy.stats import t as student_t

from longred_bench.metrics.stats import RunSteps, run_step_ratio_ci, seed_mean_of_means_diff_ci

T1 = student_t.ppf(0.975, 1)  # t's quantile for 2 seeds (1 degree of freedom)
OFFSETS = [3.0 if i % 2 else -3.0 for i in range(10)]  # mean 0


def _run(values: list[float]) -> dict:
    return {"g": {"t": dict(enumerate(values))}}


def test_paired_documents_part_floors_at_zero() -> None:
    """Per-seed differences 1 + o and -(1 + o): their seed average is 0 on every document (no
    document variance), their seed-by-document share is large; the documents add nothing, not
    less than nothing: the interval is t over the two seeds' means, 1 and -1, alone."""
    a = [_run([0.0] * 10), _run([0.0] * 10)]
    b = [_run([1.0 + o for o in OFFSETS]), _run([-1.0 - o for o in OFFSETS])]
    ci = seed_mean_of_means_diff_ci(a, b, paired=True)
    half = T1 * math.sqrt(2.0 / 2)  # variance 2 of (1, -1), over 2 seeds
    assert tuple(ci) == pytest.approx((0.0, -half, half), rel=1e-12, abs=1e-12)


def test_unpaired_documents_part_floors_at_zero() -> None:
    """Two seeds 5 +- (1 + o) against one run flat at 7: the difference is 2 on every document
    (no document variance) and the seeds' share is large; the interval is t over the seeds'
    means, 6 and 4, alone (not widened by the share's size)."""
    a = [_run([5.0 + 1.0 + o for o in OFFSETS]), _run([5.0 - 1.0 - o for o in OFFSETS])]
    b = [_run([7.0] * 10)]
    ci = seed_mean_of_means_diff_ci(a, b)
    half = T1 * math.sqrt(2.0 / 2)
    assert tuple(ci) == pytest.approx((2.0, 2.0 - half, 2.0 + half), rel=1e-12)


def test_a_member_with_one_shared_document_adds_no_document_variance() -> None:
    """Task `one` has a single document, task `many` ten whose differences vary: the interval
    is the documents' variance of `many` (weight 1/2) and the seeds', a finite interval."""
    many_a, many_b = [0.0] * 10, [float(i % 3) for i in range(10)]
    a = [{"g": {"one": {0: 0.0}, "many": dict(enumerate(many_a))}} for _ in range(2)]
    b = [{"g": {"one": {0: s}, "many": dict(enumerate(many_b))}} for s in (1.0, 3.0)]
    ci = seed_mean_of_means_diff_ci(a, b)
    doc_var = 0.25 * (sum((x - 0.9) ** 2 for x in many_b) / 9) / 10
    seed_var = 0.5 / 2  # b's seed values 0.95 and 1.95: variance 0.5, over 2 seeds
    half = math.sqrt(norm.ppf(0.975) ** 2 * doc_var + T1**2 * seed_var)
    assert all(math.isfinite(x) for x in ci)
    assert tuple(ci) == pytest.approx((1.45, 1.45 - half, 1.45 + half), rel=1e-9)


def test_the_seed_by_document_share_weighs_as_the_documents_do() -> None:
    """Per-seed differences [1, 2, 6] and [4, 4, 7] on each of two tasks (weight 1/2 each):
    both the documents' variance and the seeds' share of it scale by 1/4 a task, so the
    documents' part is half the one-task 1.5 (4.75 / 3 less I / 2), and the seeds' part is the
    one task's (s**2 / k = 1)."""
    a_rows = [[5.0, 0.0, 2.0], [1.0, 3.0, 3.0]]
    d_rows = [[1.0, 2.0, 6.0], [4.0, 4.0, 7.0]]

    def run(rows: list[float]) -> dict:
        return {"g": {t: dict(enumerate(rows)) for t in ("t1", "t2")}}

    a = [run(r) for r in a_rows]
    b = [run([x + d for x, d in zip(ar, dr, strict=True)])
         for ar, dr in zip(a_rows, d_rows, strict=True)]  # fmt: skip
    ci = seed_mean_of_means_diff_ci(a, b, paired=True)
    half = math.sqrt(norm.ppf(0.975) ** 2 * 0.75 + T1**2 * 1.0)
    assert tuple(ci) == pytest.approx((4.0, 4.0 - half, 4.0 + half), rel=1e-9)


def test_run_ratio_with_two_runs_a_side_is_t_on_the_log_of_the_runs_rates() -> None:
    """Two runs a side, each flat over its steps: t for 1 degree of freedom over each side's
    log rates, in quadrature (the steps' bootstrap is for a side of one run)."""
    a = [RunSteps([r] * 4, [1.0] * 4) for r in (0.9, 1.1)]
    b = [RunSteps([r] * 4, [1.0] * 4) for r in (1.6, 2.4)]
    ci = run_step_ratio_ci(a, b)
    v = np.log([0.9, 1.1]).var(ddof=1) / 2 + np.log([1.6, 2.4]).var(ddof=1) / 2
    half = T1 * math.sqrt(v)
    assert ci.estimate == pytest.approx(2.0)
    assert (ci.low, ci.high) == pytest.approx((2.0 * math.exp(-half), 2.0 * math.exp(half)))


def test_a_runs_fixed_seconds_count_in_its_own_rate() -> None:
    """Two runs of 4 steps at 1 s per 1,000 tokens, one with an anchor of 4 s: their own rates
    are 1 and 2 ms per token (the anchor counted), whose spread the interval takes."""
    a = [RunSteps([1.0] * 4, [1000.0] * 4), RunSteps([1.0] * 4, [1000.0] * 4, fixed=4.0)]
    b = [RunSteps([1.0] * 4, [1000.0] * 4) for _ in range(2)]
    ci = run_step_ratio_ci(a, b)
    half = T1 * math.sqrt(np.log([1e-3, 2e-3]).var(ddof=1) / 2)
    assert ci.estimate == pytest.approx(8.0 / 12.0)
    assert (ci.low, ci.high) == pytest.approx((ci.estimate * math.exp(-half),
                                               ci.estimate * math.exp(half)))  # fmt: skip
