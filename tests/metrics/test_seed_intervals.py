"""The seed-level intervals (:func:`seed_mean_of_means_diff_ci`, :func:`run_step_ratio_ci` with
several runs a side): each side's seed variance at t's quantile for k - 1 degrees of freedom,
the documents' (or a single run's steps') variance at a normal's, added in quadrature, on
hand-computed cases; the seed-by-document noise counted once; and coverage at about the stated
level where a bootstrap over 3 seeds, or one t with pooled degrees of freedom, falls short."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm
from scipy.stats import t as student_t

from longred_bench.errors import UserError
from longred_bench.metrics.stats import (
    RunSteps,
    paired_bootstrap_mean_of_means_diff_ci,
    run_step_ratio_ci,
    seed_mean_of_means_diff_ci,
)


def _flat(value: float, n: int = 5) -> dict:
    """One run scoring ``value`` on each of ``n`` documents."""
    return {"g": {"t": dict.fromkeys(range(n), value)}}


def test_three_seeds_against_one_run_give_t_with_two_degrees_of_freedom() -> None:
    # Every document has the same seed-averaged difference (3), so the documents add nothing;
    # the seeds 1, 2, 6 have variance 7, over 3 seeds 7/3, at t's quantile for 2 degrees of
    # freedom.
    ci = seed_mean_of_means_diff_ci([_flat(0.0)], [_flat(1.0), _flat(2.0), _flat(6.0)])
    half = student_t.ppf(0.975, 2) * math.sqrt(7.0 / 3.0)  # 4.3027 * 1.5275
    assert tuple(ci) == pytest.approx((3.0, 3.0 - half, 3.0 + half), abs=1e-12)
    # A side's sign does not matter: the same seeds on side a mirror the interval.
    mirror = seed_mean_of_means_diff_ci([_flat(1.0), _flat(2.0), _flat(6.0)], [_flat(0.0)])
    assert tuple(mirror) == pytest.approx((-3.0, -3.0 - half, -3.0 + half), abs=1e-12)


def test_seeds_on_both_sides_add_each_at_its_own_t_in_quadrature() -> None:
    a = [_flat(v) for v in (0.0, 1.0)]  # variance 0.5, over 2 seeds: 0.25, 1 df
    b = [_flat(v) for v in (4.0, 5.0, 9.0)]  # variance 7, over 3 seeds: 7/3, 2 df
    ci = seed_mean_of_means_diff_ci(a, b, level=0.9)
    va, vb = 0.25, 7.0 / 3.0
    half = math.sqrt(student_t.ppf(0.95, 1) ** 2 * va + student_t.ppf(0.95, 2) ** 2 * vb)
    assert tuple(ci) == pytest.approx((5.5, 5.5 - half, 5.5 + half), abs=1e-12)


def test_the_documents_sampling_variance_is_added_to_the_seeds() -> None:
    scores = np.array([0.0, 1.0, 3.0, 7.0])  # per document, the same on every seed of b
    b = [{"g": {"t": {i: float(v + s) for i, v in enumerate(scores)}}} for s in (0.0, 0.5, 2.5)]
    a = [_flat(0.0, n=4)]
    ci = seed_mean_of_means_diff_ci(a, b)
    # The documents' part: the sampling variance of the mean of the seed-averaged difference
    # (scores + 1) over the 4 documents, exactly (no resampling: nothing random moves it).
    v_doc = (scores + 1.0).var(ddof=1) / 4
    assert seed_mean_of_means_diff_ci(a, b, n_boot=7, seed=3) == ci
    v_seed = np.var([0.0, 0.5, 2.5], ddof=1) / 3  # shifted copies: no seed-by-document noise
    half = math.sqrt(norm.ppf(0.975) ** 2 * v_doc + student_t.ppf(0.975, 2) ** 2 * v_seed)
    est = scores.mean() + 1.0
    assert tuple(ci) == pytest.approx((est, est - half, est + half), rel=1e-9)


def test_the_interaction_is_the_residual_mean_square_and_leaves_the_documents_part() -> None:
    # b's two seeds, 3 documents: seed means 3 and 5 (s**2 = 2, over 2 seeds 1, 1 df); the
    # residuals after seed and document means are +-0.5 on the first and third documents, so
    # MS = 1 / (1 * 2) = 0.5 and I = MS / 3. The seed-averaged differences 2.5, 3, 6.5 have
    # variance 4.75, over 3 documents 4.75 / 3, less b's seed-by-document share I / 2, which
    # its seeds' spread counts already: 1.5.
    rows = [[1.0, 2.0, 6.0], [4.0, 4.0, 7.0]]
    b = [{"g": {"t": dict(enumerate(r))}} for r in rows]
    ci = seed_mean_of_means_diff_ci([_flat(0.0, n=3)], b)
    half = math.sqrt(norm.ppf(0.975) ** 2 * 1.5 + student_t.ppf(0.975, 1) ** 2 * 1.0)
    assert tuple(ci) == pytest.approx((4.0, 4.0 - half, 4.0 + half), rel=1e-9)


def test_two_seeds_against_one_run_cover_where_one_pooled_t_did_not() -> None:
    # A strong seed effect (sd 0.5 against document noise sd 1 on 100 documents), 2 seeds of
    # one row against an untrained run, true difference 0. One t with Welch-Satterthwaite's
    # pooled degrees of freedom covered 88% here (its degrees of freedom grow when the two
    # seeds happen to agree); each part at its own quantile covers about 95%.
    rng = np.random.default_rng(21)
    covered, trials = 0, 300
    for _ in range(trials):
        doc = rng.normal(0.0, 1.0, 100)
        one = [{"g": {"t": dict(enumerate(doc + rng.normal(0.0, 1.0, 100)))}}]
        two = [
            {"g": {"t": dict(enumerate(doc + rng.normal(0.0, 0.5) + rng.normal(0.0, 1.0, 100)))}}
            for _ in range(2)
        ]
        ci = seed_mean_of_means_diff_ci(one, two)
        covered += ci.low <= 0.0 <= ci.high
    assert covered / trials > 0.92


def test_members_weigh_as_in_the_mean_of_means() -> None:
    # Two groups, one with two members: weights 1/2, 1/4, 1/4. b's seeds are shifted copies
    # (no seed-by-document noise), so only their spread and the documents' variance count.
    base = {"x": {"p": [0.0, 2.0]}, "y": {"q": [1.0, 1.0, 4.0], "r": [0.0, 3.0]}}

    def run(shift: float) -> dict:
        return {g: {m: {i: v + shift for i, v in enumerate(vs)} for m, vs in ms.items()}
                for g, ms in base.items()}  # fmt: skip

    zero = {g: {m: dict.fromkeys(range(len(vs)), 0.0) for m, vs in ms.items()}
            for g, ms in base.items()}  # fmt: skip
    ci = seed_mean_of_means_diff_ci([zero], [run(0.0), run(1.0), run(5.0)])
    means = {"p": 1.0, "q": 2.0, "r": 1.5}
    est = 0.5 * means["p"] + 0.25 * means["q"] + 0.25 * means["r"] + 2.0  # + mean shift
    v_doc = (
        0.25 * np.var([0.0, 2.0], ddof=1) / 2
        + 0.0625 * np.var([1.0, 1.0, 4.0], ddof=1) / 3
        + 0.0625 * np.var([0.0, 3.0], ddof=1) / 2
    )
    v_seed = np.var([0.0, 1.0, 5.0], ddof=1) / 3
    half = math.sqrt(norm.ppf(0.975) ** 2 * v_doc + student_t.ppf(0.975, 2) ** 2 * v_seed)
    assert tuple(ci) == pytest.approx((est, est - half, est + half), rel=1e-9)


def test_one_run_a_side_stays_the_paired_document_bootstrap_exactly() -> None:
    rng = np.random.default_rng(0)
    a = {"g": {"t": {i: float(v) for i, v in enumerate(rng.random(30))}}}
    b = {"g": {"t": {i: float(v) for i, v in enumerate(rng.random(30))}}}
    assert seed_mean_of_means_diff_ci([a], [b], seed=2) == paired_bootstrap_mean_of_means_diff_ci(
        a, b, seed=2
    )


def test_three_seeds_that_agree_add_nothing_and_the_documents_decide() -> None:
    same = [_flat(2.0)] * 3
    assert tuple(seed_mean_of_means_diff_ci([_flat(0.0)], same)) == (2.0, 2.0, 2.0)


def test_a_spread_of_three_seeds_that_a_bootstrap_over_seeds_called_clear_is_undecided() -> None:
    # The case that motivated the t interval: three CPT seeds' RULER 8.91, 10.16, 4.17 against
    # a zero-shot 2.82 (one run). A bootstrap over the 3 seeds gave about [+0.97, +8.96]; the
    # t interval over them holds 0 (about [-2.9, +12.8] with no document noise).
    cpt = [_flat(v) for v in (8.91, 10.16, 4.17)]
    ci = seed_mean_of_means_diff_ci([_flat(2.82)], cpt)
    assert ci.estimate == pytest.approx(4.927, abs=1e-3)
    assert ci.low == pytest.approx(-2.92, abs=0.01) and ci.high == pytest.approx(12.77, abs=0.01)


def test_the_interval_covers_a_null_difference_at_about_its_level() -> None:
    # 300 experiments: 3 seeds a side whose seed effects vary (sd 1) on 20 shared documents
    # (noise sd 1, a document effect shared by both sides), true difference 0.
    rng = np.random.default_rng(11)
    covered = 0
    trials = 300
    for _ in range(trials):
        doc = rng.normal(0.0, 1.0, 20)
        sides = [
            [
                {"g": {"t": dict(enumerate(doc + rng.normal() + rng.normal(0, 0.3, 20)))}}
                for _ in range(3)
            ]
            for _ in range(2)
        ]
        ci = seed_mean_of_means_diff_ci(sides[0], sides[1], n_boot=100, seed=1)
        covered += ci.low <= 0.0 <= ci.high
    # t's coverage is about 95%; a percentile bootstrap over 3 seeds a side covered 77%.
    assert covered / trials > 0.9


def test_run_ratio_with_three_runs_is_t_on_the_log_of_the_runs_rates() -> None:
    ref = [RunSteps([1.0] * 4, [1.0] * 4)]  # constant steps: no spread
    runs = [RunSteps([r] * 4, [1.0] * 4) for r in (0.8, 1.0, 1.2)]
    ci = run_step_ratio_ci(ref, runs)
    logs = np.log([0.8, 1.0, 1.2])
    half = student_t.ppf(0.975, 2) * math.sqrt(logs.var(ddof=1) / 3)
    assert ci.estimate == pytest.approx(1.0)
    assert ci.low == pytest.approx(math.exp(-half)) and ci.high == pytest.approx(math.exp(half))
    # The reciprocal comparison gives the reciprocal interval.
    back = run_step_ratio_ci(runs, ref)
    assert back.low == pytest.approx(1 / ci.high) and back.high == pytest.approx(1 / ci.low)


def test_run_ratio_adds_a_single_runs_step_noise_to_the_other_sides_runs() -> None:
    steps = np.array([0.5, 1.0, 1.5, 1.0])
    one = [RunSteps(list(steps), [1.0] * 4)]
    runs = [RunSteps([r] * 4, [1.0] * 4) for r in (0.8, 1.0, 1.2)]
    ci = run_step_ratio_ci(one, runs, n_boot=400, seed=3)
    # Side a's steps are drawn first from default_rng(seed): its log-rate bootstrap variance.
    idx = np.random.default_rng(3).integers(0, 4, size=(400, 4))
    v_steps = np.log(steps[idx].mean(axis=1)).var(ddof=1)
    v_runs = np.log([0.8, 1.0, 1.2]).var(ddof=1) / 3
    half = math.sqrt(norm.ppf(0.975) ** 2 * v_steps + student_t.ppf(0.975, 2) ** 2 * v_runs)
    assert tuple(ci) == pytest.approx((1.0, math.exp(-half), math.exp(half)), rel=1e-9)
    with pytest.raises(UserError, match="must be positive to compare runs"):
        run_step_ratio_ci(one, [RunSteps([0.0], [1.0]), RunSteps([1.0], [1.0])])
    with pytest.raises(UserError, match="fixed amount must be a finite number"):
        run_step_ratio_ci(one, [RunSteps([1.0], [1.0], fixed=math.inf)])


# ---------------------------------------------------------------- rows paired by seed


def test_paired_seeds_take_t_over_the_per_seed_differences() -> None:
    # Seed by seed, b - a is 2, 3, 7 (each flat over the documents): their variance 7 over 3
    # seeds, at t for 2 degrees of freedom, replaces the two rows' spreads (0, 1, 4 and
    # 2, 4, 11: variances 13/3 and 43/3, each over 3 seeds, unpaired: about twice as wide).
    a = [_flat(v) for v in (0.0, 1.0, 4.0)]
    b = [_flat(v) for v in (2.0, 4.0, 11.0)]
    ci = seed_mean_of_means_diff_ci(a, b, paired=True)
    half = student_t.ppf(0.975, 2) * math.sqrt(7.0 / 3.0)
    assert tuple(ci) == pytest.approx((4.0, 4.0 - half, 4.0 + half), abs=1e-12)
    unpaired = seed_mean_of_means_diff_ci(a, b)
    assert unpaired.estimate == pytest.approx(ci.estimate)
    assert unpaired.high - unpaired.low > 1.9 * (ci.high - ci.low)


def test_rows_equal_at_every_seed_differ_by_exactly_nothing_when_paired() -> None:
    rng = np.random.default_rng(3)
    runs = [{"g": {"t": dict(enumerate(rng.normal(0.0, 1.0, 12)))}} for _ in range(3)]
    assert tuple(seed_mean_of_means_diff_ci(runs, runs, paired=True)) == (0.0, 0.0, 0.0)
    wide = seed_mean_of_means_diff_ci(runs, runs)
    assert wide.low < -0.1 and wide.high > 0.1  # unpaired, their seed spread counts twice


def test_paired_documents_part_less_the_differences_seed_by_document_share() -> None:
    # The per-seed differences D = b - a over 3 documents are [1, 2, 6] and [4, 4, 7]: the
    # matrix of the interaction test above, as one side of 2 seeds (s**2 / k = 1, 1 df; the
    # documents' 4.75 / 3 less I / 2: 1.5).
    a_rows = [[5.0, 0.0, 2.0], [1.0, 3.0, 3.0]]
    d_rows = [[1.0, 2.0, 6.0], [4.0, 4.0, 7.0]]
    a = [{"g": {"t": dict(enumerate(r))}} for r in a_rows]
    b = [
        {"g": {"t": {i: x + d for i, (x, d) in enumerate(zip(ar, dr, strict=True))}}}
        for ar, dr in zip(a_rows, d_rows, strict=True)
    ]
    ci = seed_mean_of_means_diff_ci(a, b, paired=True)
    half = math.sqrt(norm.ppf(0.975) ** 2 * 1.5 + student_t.ppf(0.975, 1) ** 2 * 1.0)
    assert tuple(ci) == pytest.approx((4.0, 4.0 - half, 4.0 + half), rel=1e-9)


def test_pairing_needs_the_same_two_or_more_seeds_on_both_sides() -> None:
    with pytest.raises(UserError, match="same 2 or more seeds"):
        seed_mean_of_means_diff_ci([_flat(0.0)] * 3, [_flat(1.0)] * 2, paired=True)
    with pytest.raises(UserError, match="same 2 or more seeds"):
        seed_mean_of_means_diff_ci([_flat(0.0)], [_flat(1.0)], paired=True)


@pytest.mark.parametrize("shared_sd", [0.0, 1.0])
def test_paired_seeds_cover_a_null_difference_whether_or_not_the_rows_move_together(
    shared_sd: float,
) -> None:
    # 3 seeds a side on 40 shared documents, true difference 0: each seed moves both rows by a
    # shared effect (sd ``shared_sd``: the same data order) and each row by its own (sd 0.4).
    # Paired, the interval covers about 95% either way, and where the rows move together it is
    # much narrower than the unpaired one, which counts the shared effect twice.
    rng = np.random.default_rng(17)
    covered, widths, trials = 0, [], 300
    for _ in range(trials):
        doc = rng.normal(0.0, 1.0, 40)
        shared = rng.normal(0.0, shared_sd, 3) if shared_sd else np.zeros(3)
        sides = [
            [
                {"g": {"t": dict(enumerate(doc + s + rng.normal(0, 0.4) + rng.normal(0, 1, 40)))}}
                for s in shared
            ]
            for _ in range(2)
        ]
        ci = seed_mean_of_means_diff_ci(sides[0], sides[1], paired=True)
        wide = seed_mean_of_means_diff_ci(sides[0], sides[1])
        covered += ci.low <= 0.0 <= ci.high
        widths.append((ci.high - ci.low) / (wide.high - wide.low))
    assert covered / trials > 0.92
    if shared_sd:
        assert float(np.median(widths)) < 0.6
