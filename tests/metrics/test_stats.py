"""``longred_bench.metrics.stats``: percentile-bootstrap intervals with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from longred_bench.errors import UserError
from longred_bench.metrics.stats import (
    Interval,
    bootstrap_mean_ci,
    bootstrap_mean_of_means_ci,
    matched_keys,
    paired_bootstrap_diff_ci,
    paired_bootstrap_mean_of_means_diff_ci,
    seed_mean_of_means_diff_ci,
)


def test_constant_data_gives_a_zero_width_interval() -> None:
    ci = bootstrap_mean_ci([0.1] * 7)
    assert ci.low == ci.estimate == ci.high and ci.estimate == pytest.approx(0.1)
    nested = {g: {t: [0.3] * (3 + i) for i, t in enumerate("abcdefghij")} for g in "xyz"}
    ci = bootstrap_mean_of_means_ci(nested, n_boot=200)
    assert ci.low == ci.estimate == ci.high and ci.estimate == pytest.approx(0.3)


def test_interval_covers_the_true_mean_of_a_known_distribution() -> None:
    rng = np.random.default_rng(123)
    values = rng.normal(3.0, 2.0, size=4000)
    est, low, high = bootstrap_mean_ci(values)
    assert est == pytest.approx(values.mean())
    assert low < 3.0 < high
    # Half-width about 1.96 * 2 / sqrt(4000) = 0.062.
    assert (high - low) / 2 == pytest.approx(1.96 * 2.0 / math.sqrt(4000), rel=0.15)


def test_bernoulli_interval_matches_the_normal_approximation() -> None:
    values = [1.0] * 300 + [0.0] * 700  # p = 0.3, n = 1000
    ci = bootstrap_mean_ci(values, n_boot=4000, seed=7)
    half = 1.96 * math.sqrt(0.3 * 0.7 / 1000)
    assert ci.estimate == pytest.approx(0.3)
    assert ci.low == pytest.approx(0.3 - half, abs=0.006)
    assert ci.high == pytest.approx(0.3 + half, abs=0.006)


def test_each_end_of_the_interval_cuts_half_of_what_the_level_leaves_out() -> None:
    # Bootstrap means of 50 zeros and 50 ones: about normal, mean 0.5, sd 0.5 / sqrt(100) =
    # 0.05. A 50% interval cuts 25% off each side: 0.674 sd = 0.034 either way of the mean.
    ci = bootstrap_mean_ci([0.0] * 50 + [1.0] * 50, level=0.5, n_boot=4000)
    assert ci.estimate - ci.low == pytest.approx(0.674 * 0.05, abs=0.006)
    assert ci.high - ci.estimate == pytest.approx(0.674 * 0.05, abs=0.006)


def test_level_widens_the_interval_and_seed_makes_it_deterministic() -> None:
    values = np.random.default_rng(0).uniform(size=200)
    narrow = bootstrap_mean_ci(values, level=0.5)
    wide = bootstrap_mean_ci(values, level=0.99)
    assert wide.low < narrow.low < narrow.high < wide.high
    assert bootstrap_mean_ci(values, seed=5) == bootstrap_mean_ci(values, seed=5)
    assert bootstrap_mean_ci(values, seed=5) != bootstrap_mean_ci(values, seed=6)
    assert isinstance(narrow, Interval) and narrow._fields == ("estimate", "low", "high")


def test_paired_diff_of_identical_vectors_is_exactly_zero() -> None:
    scores = {i: float(v) for i, v in enumerate(np.random.default_rng(1).uniform(size=50))}
    assert paired_bootstrap_diff_ci(scores, dict(scores)) == (0.0, 0.0, 0.0)
    nested = {"General": {"cloze": scores}, "RC": {"nextsent": scores}}
    assert paired_bootstrap_mean_of_means_diff_ci(nested, nested) == (0.0, 0.0, 0.0)


def test_paired_diff_matches_keys_and_is_b_minus_a() -> None:
    a = {"d1": 0.0, "d2": 1.0, "d3": 0.0, "only_a": 5.0}
    b = {"d3": 1.0, "d2": 1.0, "d1": 1.0, "only_b": -5.0}
    assert matched_keys(a, b) == ["d1", "d2", "d3"]
    est, low, high = paired_bootstrap_diff_ci(a, b, n_boot=500)
    assert est == pytest.approx(2 / 3)
    assert 0.0 <= low <= est <= high <= 1.0


def test_pairing_is_tighter_than_independent_intervals() -> None:
    # b = a + 0.05 on every item, with large item-to-item variation: the paired interval of
    # the difference is zero-width, while the two means' intervals overlap heavily.
    rng = np.random.default_rng(2)
    a = {i: float(v) for i, v in enumerate(rng.uniform(size=300))}
    b = {i: v + 0.05 for i, v in a.items()}
    diff = paired_bootstrap_diff_ci(a, b)
    assert diff.estimate == pytest.approx(0.05)
    assert diff.high - diff.low < 1e-12
    ca, cb = bootstrap_mean_ci(list(a.values())), bootstrap_mean_ci(list(b.values()))
    assert cb.low < ca.high  # independent intervals overlap


def test_mean_of_means_weights_every_member_and_group_once() -> None:
    groups = {
        "General": {"big": [1.0] * 1000, "small": [0.0] * 10},  # General = 0.5
        "RC": {"one": [0.2, 0.4]},  # RC = 0.3
    }
    ci = bootstrap_mean_of_means_ci(groups, n_boot=500)
    assert ci.estimate == pytest.approx(0.4)  # (0.5 + 0.3) / 2, not the pooled item mean
    assert ci.low < 0.4 < ci.high


def test_paired_mean_of_means_diff_is_the_difference_of_the_statistics() -> None:
    rng = np.random.default_rng(3)
    a = {g: {t: {i: float(rng.uniform()) for i in range(40)} for t in "pq"} for g in "xy"}
    b = {g: {t: {i: v + (0.1 if g == "x" else 0.0) for i, v in d.items()} for t, d in m.items()}
         for g, m in a.items()}  # fmt: skip
    mean_a = bootstrap_mean_of_means_ci(
        {g: {t: list(d.values()) for t, d in m.items()} for g, m in a.items()}
    ).estimate
    mean_b = bootstrap_mean_of_means_ci(
        {g: {t: list(d.values()) for t, d in m.items()} for g, m in b.items()}
    ).estimate
    ci = paired_bootstrap_mean_of_means_diff_ci(a, b)
    assert ci.estimate == pytest.approx(mean_b - mean_a) and ci.estimate == pytest.approx(0.05)
    assert ci.low == pytest.approx(0.05) and ci.high == pytest.approx(0.05)  # constant shift


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: bootstrap_mean_ci([]), "no values"),
        (lambda: bootstrap_mean_ci([1.0, math.nan]), "finite"),
        (lambda: bootstrap_mean_ci([1.0], n_boot=0), "n_boot"),
        (lambda: bootstrap_mean_ci([1.0], level=1.0), "level"),
        (lambda: paired_bootstrap_diff_ci({1: 0.0}, {2: 0.0}), "no item keys"),
        (lambda: bootstrap_mean_of_means_ci({}), "no groups"),
        (lambda: bootstrap_mean_of_means_ci({"g": {}}), "no members"),
        (
            lambda: paired_bootstrap_mean_of_means_diff_ci(
                {"g": {"t": {1: 0.0}}}, {"g": {"u": {1: 0.0}}}
            ),
            "different groups",
        ),
    ],
)
def test_bad_input_is_a_user_error(call, match: str) -> None:
    with pytest.raises(UserError, match=match):
        call()


def test_large_samples_are_resampled_in_blocks() -> None:
    # More draws than one block (2**22): same answer as a constant, and still deterministic.
    values = np.zeros(5000)
    values[::2] = 1.0
    ci = bootstrap_mean_ci(values, n_boot=1000)
    assert ci.estimate == 0.5 and ci.low < 0.5 < ci.high
    assert bootstrap_mean_ci(values, n_boot=1000) == ci


def _run(p: float, n: int = 600, seed: int = 0) -> dict:
    """One run: exactly ``round(p * n)`` of ``n`` documents right, in a seeded order."""
    hits = np.zeros(n)
    hits[: round(p * n)] = 1.0
    np.random.default_rng(seed).shuffle(hits)
    return {"G": {"t": {i: float(v) for i, v in enumerate(hits)}}}


def test_seed_bootstrap_with_one_seed_is_the_paired_document_bootstrap() -> None:
    a, b = _run(0.5, seed=1), _run(0.6, seed=2)
    one = seed_mean_of_means_diff_ci([a], [b])
    paired = paired_bootstrap_mean_of_means_diff_ci(a, b)
    assert one.estimate == pytest.approx(paired.estimate)
    assert one.high - one.low == pytest.approx(paired.high - paired.low, rel=0.15)


def test_seeds_that_disagree_widen_the_interval() -> None:
    a = [_run(0.5, seed=1)]
    agree = [_run(0.6, seed=s) for s in (2, 3, 4)]
    disagree = [_run(p, seed=s) for p, s in ((0.4, 2), (0.6, 3), (0.8, 4))]
    narrow = seed_mean_of_means_diff_ci(a, agree)
    wide = seed_mean_of_means_diff_ci(a, disagree)
    assert narrow.low > 0  # three seeds that agree: the gain is clear
    assert wide.estimate == pytest.approx(narrow.estimate, abs=0.03)  # same mean effect ...
    assert wide.low < 0 < wide.high  # ... but retraining moves it more than the effect
    assert (wide.high - wide.low) > 2 * (narrow.high - narrow.low)


def test_seed_bootstrap_pairs_documents_and_checks_its_input() -> None:
    a = _run(0.5, seed=1)
    same = seed_mean_of_means_diff_ci([a, a], [a])
    assert same == (0.0, 0.0, 0.0)  # identical scores: exactly 0, whatever is resampled
    with pytest.raises(UserError, match="at least one run"):
        seed_mean_of_means_diff_ci([], [a])
    with pytest.raises(UserError, match="different groups/members"):
        seed_mean_of_means_diff_ci([a], [{"H": a["G"]}])


@pytest.mark.parametrize("n_boot", [10.5, True, "200"])
def test_a_resample_count_that_is_not_a_whole_number_is_refused(n_boot) -> None:
    with pytest.raises(UserError, match="n_boot must be a whole number of resamples"):
        bootstrap_mean_ci([0.1, 0.2, 0.3], n_boot=n_boot)
