"""Table 1's claims: (c) drift falls after CPT, net of the control's drift, every seed; (c2) a
larger RoPE base drifts more, by a rank trend over the bases with an interval over texts."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from longred_bench.metrics.rank_trend import bootstrap_rank_trend_ci
from longred_bench.reports.drift_verdicts import (
    PAPER_KL_RECOVERY,
    verdict_base_drifts_more,
    verdict_drift_falls,
)
from longred_bench.reports.verdict_rules import (
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    REPRODUCED,
    UNDECIDED,
)

N = 12


def noise(seed: int, scale: float) -> np.ndarray:
    return scale * np.random.default_rng(seed).standard_normal(N)


def summary(hidden: Any, kl: Any, **extra: Any) -> dict[str, Any]:
    hidden, kl = np.asarray(hidden, dtype=float), np.asarray(kl, dtype=float)
    return {"texts": "sotu", "seq_len": 256, "num_texts": N, "num_tokens": 256 * N,
            "mean_hidden_cosine": float(hidden.mean()), "mean_attention_kl": float(kl.mean()),
            "text_hidden_cosine": hidden.tolist(), "text_attention_kl": kl.tolist(),
            **extra}  # fmt: skip


BEFORE_H = 0.95 + noise(0, 0.02)
BEFORE_K = 0.4 + noise(1, 0.05)


def runs(dh: float, dk: float, scale: float, seeds: int, base: int, reference=None):
    """Per-seed summaries whose per-text change from ``reference`` (before, or the original's
    identity: hidden 1, KL 0) is ``dh``/``dk`` plus noise."""
    h0, k0 = reference if reference is not None else (1.0, 0.0)
    return [summary(h0 + dh + noise(base + s, scale), k0 + dk + noise(base + 50 + s, scale),
                    seed=s) for s in range(seeds)]  # fmt: skip


CONTROL = runs(-0.01, 0.02, 0.001, 3, 100)


@pytest.mark.parametrize(
    ("dh", "dk", "scale", "label"),
    [
        (0.01, -0.05, 0.001, REPRODUCED),  # net of the control: hidden +0.02, KL -0.07
        (-0.03, -0.05, 0.001, NOT_REPRODUCED),  # hidden falls more than the data's drift
        (-0.01, -0.2, 0.1, UNDECIDED),  # hidden: no net change, wide (contains 0 and the paper
    ],
)
def test_verdict_c_labels_the_change_net_of_the_control(dh, dk, scale, label) -> None:
    before = summary(BEFORE_H, BEFORE_K)
    after = runs(dh, dk, scale, 3, 200, reference=(BEFORE_H, BEFORE_K))
    verdict = verdict_drift_falls("abf:theta=2e6", before, after, CONTROL)
    assert verdict.label == label
    assert "3 cpt and 3 control seeds" in verdict.ours


def test_verdict_c_is_not_reproduced_where_the_interval_excludes_the_papers_fall() -> None:
    """KL does not move net of the control, and its interval rules out the paper's fall
    (its recovery times the zero-shot KL, downwards), so the claim is not reproduced, not
    undecided; hidden similarity rises as claimed."""
    before = summary(BEFORE_H, BEFORE_K)
    after = runs(0.01, 0.02, 0.01, 3, 500, reference=(BEFORE_H, BEFORE_K))
    verdict = verdict_drift_falls("abf:theta=2e6", before, after, CONTROL)
    fall = -PAPER_KL_RECOVERY * float(BEFORE_K.mean())
    assert verdict.label == NOT_REPRODUCED
    assert f"(the paper's effect, scaled: {fall:+.3g}): not reproduced" in verdict.ours
    assert "): reproduced; attention KL" in verdict.ours  # hidden similarity's part


def test_verdict_c_counts_every_seed() -> None:
    """One cpt seed moves the other way: with every seed the interval widens past 0."""
    before = summary(BEFORE_H, BEFORE_K)
    good = runs(0.01, -0.05, 0.001, 2, 300, reference=(BEFORE_H, BEFORE_K))
    bad = runs(-0.04, 0.06, 0.001, 1, 400, reference=(BEFORE_H, BEFORE_K))
    assert verdict_drift_falls("e", before, good, CONTROL).label == REPRODUCED
    assert verdict_drift_falls("e", before, good + bad, CONTROL).label != REPRODUCED


def test_verdict_c_is_not_comparable_without_a_control_or_per_text_values() -> None:
    before = summary(BEFORE_H, BEFORE_K)
    after = runs(0.01, -0.05, 0.001, 1, 200, reference=(BEFORE_H, BEFORE_K))
    verdict = verdict_drift_falls("e", before, after, [])
    assert verdict.label == NOT_COMPARABLE and "no `control` row" in verdict.ours
    old = {k: v for k, v in after[0].items() if not k.startswith("text_")}
    assert verdict_drift_falls("e", before, [old], CONTROL).label == NOT_COMPARABLE
    after = runs(0.01, -0.05, 0.001, 3, 200, reference=(BEFORE_H, BEFORE_K))
    assert verdict_drift_falls("e", before, after, CONTROL).label == REPRODUCED
    for key, other in (("seq_len", 512), ("texts", "pg19"), ("num_texts", N + 1)):
        moved = [{**a, key: other} for a in after]  # after-CPT drift on other texts
        assert verdict_drift_falls("e", before, moved, CONTROL).label == NOT_COMPARABLE, key


def base_summaries(hidden_means, kl_means, scale=0.005):
    return {
        base: summary(h + noise(i, scale), k + noise(i + 20, scale))
        for i, (base, h, k) in enumerate(zip((4e5, 2e6, 1e7), hidden_means, kl_means, strict=True))
    }


def test_verdict_c2_labels_the_rank_trend() -> None:
    ordered = base_summaries((0.98, 0.96, 0.94), (0.2, 0.3, 0.4))
    assert verdict_base_drifts_more(ordered).label == REPRODUCED
    reversed_ = base_summaries((0.94, 0.96, 0.98), (0.4, 0.3, 0.2))
    assert verdict_base_drifts_more(reversed_).label == NOT_REPRODUCED
    flat = base_summaries((0.96, 0.96, 0.96), (0.3, 0.3, 0.3), scale=0.05)
    assert verdict_base_drifts_more(flat).label == UNDECIDED
    two = dict(list(ordered.items())[:2])
    assert verdict_base_drifts_more(two).label == NOT_COMPARABLE
    none = verdict_base_drifts_more({})
    assert none.label == NOT_COMPARABLE and none.scope == "ABF bases none"
    # every base in order on each of 9 texts: too few to resample (2 texts read -1 [-1, -1])
    few = {b: {**s, **{f"text_{m}": s[f"text_{m}"][:9] for m in ("hidden_cosine",
                                                               "attention_kl")}}
           for b, s in ordered.items()}  # fmt: skip
    verdict = verdict_base_drifts_more(few)
    assert verdict.label == NOT_COMPARABLE and "9 text(s) measured at every base" in verdict.ours
    assert "fewer than 10 texts" in verdict.rule
    # Every base drifts exactly alike on every text: rho is undefined, the floor, not undecided.
    same = base_summaries((0.96, 0.96, 0.96), (0.3, 0.3, 0.3), scale=0.0)
    verdict = verdict_base_drifts_more(same)
    assert verdict.label == NOT_COMPARABLE and "undefined in most resamples" in verdict.rule


def test_rank_trend_interval_resamples_items() -> None:
    rng = np.random.default_rng(0)
    clear = [rng.normal(m, 0.1, 40) for m in (0.0, 1.0, 2.0)]
    ci = bootstrap_rank_trend_ci([1, 2, 3], clear)
    assert ci.estimate == ci.low == ci.high == 1.0
    flat = [rng.normal(0, 1, 40) for _ in range(3)]
    ci = bootstrap_rank_trend_ci([1, 2, 3], flat)
    assert ci.low < 0 < ci.high


def test_rank_trend_interval_keeps_the_settings_paired_on_each_text() -> None:
    """Each text has its own offset, shared by every setting, far larger than the settings'
    small, consistent step: one draw of texts for all settings keeps the order in every
    resample; drawing texts per setting would let the offsets reorder the means."""
    offsets = np.random.default_rng(3).normal(0, 1.0, 40)
    paired = [offsets + 0.01 * k for k in range(3)]
    ci = bootstrap_rank_trend_ci([1, 2, 3], paired)
    assert ci.estimate == ci.low == ci.high == 1.0


def test_verdict_c_shows_the_raw_change_beside_the_net_one() -> None:
    """Hidden similarity falls after CPT (-0.005), less than the data alone moves it (-0.01):
    reproduced net of the control, and the raw fall is printed, not hidden by the net rise."""
    before = summary(BEFORE_H, BEFORE_K)
    after = runs(-0.005, -0.05, 0.0005, 3, 300, reference=(BEFORE_H, BEFORE_K))
    verdict = verdict_drift_falls("e", before, after, CONTROL)
    assert verdict.label == REPRODUCED
    assert "raw change after CPT -0.005" in verdict.ours
    assert "(mean of its seeds) (against the claim's direction: it " \
        "holds net of the control only)" in verdict.ours  # fmt: skip
    assert verdict.claim.startswith("Drift falls after CPT, net of what the same training data")
    # the KL falls raw too (-0.05): no such note on it
    assert verdict.ours.count("against the claim's direction") == 1
    # hidden similarity falls more than the data's own drift: not reproduced, and the raw fall
    # is not said to hold net of the control
    after = runs(-0.03, -0.05, 0.001, 3, 300, reference=(BEFORE_H, BEFORE_K))
    refuted = verdict_drift_falls("e", before, after, CONTROL)
    assert refuted.label == NOT_REPRODUCED
    assert "(against the claim's direction);" in refuted.ours
    assert "net of the control only" not in refuted.ours


def test_means_that_differ_read_differently() -> None:
    """A random model's drift (hidden similarity 0.999995, 0.999992, 0.99999) is not written
    "1, 1, 1", nor its zero-shot similarity "1 before"; values 4 digits tell apart stay 4."""
    near = base_summaries((0.999995, 0.999992, 0.99999), (1e-5, 2e-5, 3e-5), scale=0.0)
    assert "hidden similarity 0.999995, 0.999992, 0.99999:" in verdict_base_drifts_more(near).ours
    apart = base_summaries((0.98, 0.96, 0.94), (0.2, 0.3, 0.4), scale=0.0)
    assert "hidden similarity 0.98, 0.96, 0.94:" in verdict_base_drifts_more(apart).ours
    before = summary(np.full(N, 0.999995), np.full(N, 1e-5))
    after = runs(0.0, 0.0, 1e-7, 2, 300, reference=(0.999995, 1e-5))
    assert (
        "hidden similarity 0.999995 before"
        in verdict_drift_falls("abf:theta=1e5", before, after, CONTROL).ours
    )


def test_verdict_c_compares_cpt_and_control_seed_by_seed() -> None:
    """At each seed CPT and the control read the same data: a seed that moves both alike
    cancels in the per-seed differences, where unpaired seeds (other numbers) count it twice."""
    before = summary(BEFORE_H, BEFORE_K)
    swing = (0.0, 0.03, -0.03)  # each seed's shared effect on hidden similarity and KL
    control = [
        summary(1.0 - 0.01 + w + noise(600 + s, 0.001), 0.02 + w + noise(650 + s, 0.001), seed=s)
        for s, w in enumerate(swing)
    ]
    after = [
        summary(BEFORE_H + 0.01 + w + noise(700 + s, 0.001),
                BEFORE_K - 0.05 + w + noise(750 + s, 0.001), seed=s)
        for s, w in enumerate(swing)
    ]  # fmt: skip
    paired = verdict_drift_falls("e", before, after, control)
    assert paired.label == REPRODUCED and "control seeds (paired by seed)" in paired.ours
    renumbered = [{**c, "seed": c["seed"] + 10} for c in control]
    unpaired = verdict_drift_falls("e", before, after, renumbered)
    assert unpaired.label != REPRODUCED and "(paired by seed)" not in unpaired.ours


def test_verdict_c_with_a_seed_missing_is_judged_unpaired() -> None:
    """A summary without a seed (NaN where a table of records lacks it) pairs with nothing."""
    before = summary(BEFORE_H, BEFORE_K)
    after = runs(0.01, -0.05, 0.001, 3, 200, reference=(BEFORE_H, BEFORE_K))
    for lost in (float("nan"), None):
        unseeded = [*after[:2], {**after[2], "seed": lost}]
        verdict = verdict_drift_falls("e", before, unseeded, CONTROL)
        assert verdict.label == REPRODUCED and "(paired by seed)" not in verdict.ours
    assert "(paired by seed)" in verdict_drift_falls("e", before, after, CONTROL).ours
