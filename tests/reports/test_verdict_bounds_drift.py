"""Table 1's drift claims (:mod:`longred_bench.reports.drift_verdicts`) at the edges the other
drift tests leave open: (c2)'s paper effect (rho -1 for hidden similarity, its three rows in
order) rules out an interval that holds 0 but not -1; (c) scales Table 1's recovered drift to
ours, states its texts and seeds, and needs every run on the same texts."""

from __future__ import annotations

from typing import Any

import numpy as np

from longred_bench.reports.drift_verdicts import verdict_base_drifts_more, verdict_drift_falls
from longred_bench.reports.verdict_rules import NOT_COMPARABLE, NOT_REPRODUCED

N = 12
SIGN = np.array([1.0 if i % 2 == 0 else -1.0 for i in range(N)])


def summary(hidden: Any, kl: Any) -> dict[str, Any]:
    hidden, kl = np.asarray(hidden, dtype=float), np.asarray(kl, dtype=float)
    return {"texts": "sotu", "seq_len": 256, "num_texts": N, "num_tokens": 256 * N,
            "mean_hidden_cosine": float(hidden.mean()), "mean_attention_kl": float(kl.mean()),
            "text_hidden_cosine": hidden.tolist(), "text_attention_kl": kl.tolist()}  # fmt: skip


def test_c2_interval_holding_zero_but_not_the_papers_rho_is_not_reproduced() -> None:
    # Hidden similarity: the middle base is clearly the most similar; the outer two tie on
    # average, their order on each resample of texts a coin flip. Rho then takes -0.5 or +0.5:
    # the interval holds 0 but excludes the paper's -1 -> not reproduced (KL is in order).
    bases = {
        4e5: summary(0.95 + 0.01 * SIGN, np.full(N, 0.2) + 0.001 * SIGN),
        2e6: summary(np.full(N, 0.99), np.full(N, 0.3)),
        1e7: summary(0.95 - 0.01 * SIGN, np.full(N, 0.4) + 0.001 * SIGN),
    }
    v = verdict_base_drifts_more(bases)
    hidden = v.ours.split(";")[0]
    assert "[-0.5, +0.5] (not reproduced)" in hidden, v.ours
    assert "attention KL" in v.ours and "(reproduced)" in v.ours
    assert v.label == NOT_REPRODUCED


BEFORE = summary(np.full(N, 0.95) + 0.005 * SIGN, np.full(N, 0.4) + 0.01 * SIGN)


def _runs(h: float, k: float, seeds: int, texts: str = "sotu") -> list[dict[str, Any]]:
    rng = np.random.default_rng(seeds)
    return [{**summary(h + 0.001 * rng.standard_normal(N), k + 0.001 * rng.standard_normal(N)),
             "seed": s, "texts": texts} for s in range(seeds)]  # fmt: skip


def test_c_states_the_papers_effect_scaled_from_table_1() -> None:
    # Table 1's CPT removed on average 54.9% of the hidden-similarity drift ((0.95 - 0.92) /
    # 0.08, (0.94 - 0.83) / 0.17, (0.91 - 0.76) / 0.24) and 67.8% of the attention KL
    # ((3.51 - 1.51) / 3.51, ...): times our zero-shot drift, 1 - 0.95 and 0.4.
    v = verdict_drift_falls("abf:theta=2e6", BEFORE, _runs(0.97, 0.2, 3), _runs(0.99, 0.01, 3))
    assert "(the paper's effect, scaled: +0.0275)" in v.ours
    assert "(the paper's effect, scaled: -0.271)" in v.ours


def test_c_states_its_paired_texts_and_seeds() -> None:
    v = verdict_drift_falls("abf:theta=2e6", BEFORE, _runs(0.97, 0.2, 3), _runs(0.99, 0.01, 2))
    assert "over 3 cpt and 2 control seeds and n=12 paired texts" in v.ours


def test_c_needs_every_run_on_the_same_texts() -> None:
    other = _runs(0.99, 0.01, 3, texts="brown")  # the control measured on other texts
    v = verdict_drift_falls("abf:theta=2e6", BEFORE, _runs(0.97, 0.2, 3), other)
    assert v.label == NOT_COMPARABLE
    assert "no per-text values on the same texts" in v.ours


def test_c_counts_the_texts_its_intervals_read() -> None:
    """Texts a run has no finite value of are left out of the interval (every run's texts
    count); the evidence said n=12 paired texts while the hidden interval read 8."""
    after = _runs(0.97, 0.2, 2)
    for run in after:
        run["text_hidden_cosine"][:4] = [float("nan")] * 4
    v = verdict_drift_falls("abf:theta=2e6", BEFORE, after, _runs(0.99, 0.01, 2))
    assert "n=8 (hidden similarity) and n=12 (attention KL) paired texts" in v.ours
