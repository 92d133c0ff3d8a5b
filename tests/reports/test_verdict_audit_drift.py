"""Table 1's drift claims (:mod:`longred_bench.reports.drift_verdicts`) at the edges the other
drift tests leave open: (c2)'s floor of texts at exactly :data:`MIN_TEXTS_C2` and the order of
the bases it ranks, (c)'s pairing by seed whatever order the runs come in, and a text without a
value before CPT left out of its change."""

from __future__ import annotations

from typing import Any

import numpy as np
from drift_summaries import noise as _noise
from drift_summaries import summary as _texts

from longred_bench.reports.drift_verdicts import (
    MIN_TEXTS_C2,
    verdict_base_drifts_more,
    verdict_drift_falls,
)
from longred_bench.reports.verdict_rules import NOT_COMPARABLE, REPRODUCED


def _summary(hidden: float, kl: float, n: int) -> dict[str, Any]:
    """A zero-shot summary of ``n`` texts around ``hidden`` and ``kl`` (+-1%)."""
    wobble = np.array([0.01 * ((i % 3) - 1) for i in range(n)])
    h, k = hidden + 0.1 * wobble, kl * (1 + wobble)
    return {"texts": "sotu", "seq_len": 256, "num_texts": n, "num_tokens": 256 * n,
            "mean_hidden_cosine": float(h.mean()), "mean_attention_kl": float(k.mean()),
            "text_hidden_cosine": h.tolist(), "text_attention_kl": k.tolist()}  # fmt: skip


def _bases(n: int) -> dict[float, dict[str, Any]]:
    """Three ABF bases in the paper's order: a larger base, lower similarity and higher KL."""
    return {4e5: _summary(0.99, 0.1, n), 2e6: _summary(0.95, 0.2, n), 1e7: _summary(0.9, 0.4, n)}


def test_c2_with_exactly_the_floor_of_texts_is_judged() -> None:
    at = verdict_base_drifts_more(_bases(MIN_TEXTS_C2))
    assert at.label == REPRODUCED, at.ours
    assert f"n={MIN_TEXTS_C2} texts" in at.ours
    below = verdict_base_drifts_more(_bases(MIN_TEXTS_C2 - 1))
    assert below.label == NOT_COMPARABLE
    assert f"a bootstrap needs at least {MIN_TEXTS_C2}" in below.ours


def test_c2_ranks_the_bases_by_value_not_by_the_order_they_are_given() -> None:
    ordered = _bases(MIN_TEXTS_C2)
    shuffled = {b: ordered[b] for b in (2e6, 1e7, 4e5)}
    v = verdict_base_drifts_more(shuffled)
    assert v.label == REPRODUCED, v.ours
    assert v.ours == verdict_base_drifts_more(ordered).ours


BEFORE_H, BEFORE_K = 0.95 + _noise(0, 0.02), 0.4 + _noise(1, 0.05)
SWING = (0.0, 0.03, -0.03)  # each seed's shared effect on both rows
CONTROL = [_texts(0.99 + w + _noise(600 + s, 0.001), 0.02 + w + _noise(650 + s, 0.001), seed=s)
           for s, w in enumerate(SWING)]  # fmt: skip
AFTER = [_texts(BEFORE_H + 0.01 + w + _noise(700 + s, 0.001),
                BEFORE_K - 0.05 + w + _noise(750 + s, 0.001), seed=s)
         for s, w in enumerate(SWING)]  # fmt: skip


def test_c_pairs_seed_with_seed_whatever_order_the_runs_come_in() -> None:
    """The control's runs listed from the highest seed: still compared seed by seed, the same
    verdict as in seed order (not seed 0 of `cpt` against seed 2 of `control`)."""
    before = _texts(BEFORE_H, BEFORE_K)
    ordered = verdict_drift_falls("e", before, AFTER, CONTROL)
    assert ordered.label == REPRODUCED and "(paired by seed)" in ordered.ours
    backwards = verdict_drift_falls("e", before, AFTER, CONTROL[::-1])
    assert (backwards.label, backwards.ours) == (ordered.label, ordered.ours)


def test_c_leaves_out_a_text_without_a_value_before_cpt() -> None:
    """Text 0 has no finite hidden similarity before CPT: its change after CPT is unknown, so
    the hidden-similarity interval reads the other 11 texts (KL, known on all, reads 12)."""
    hidden = BEFORE_H.copy()
    hidden[0] = np.nan
    v = verdict_drift_falls("e", _texts(hidden, BEFORE_K), AFTER, CONTROL)
    assert "n=11 (hidden similarity) and n=12 (attention KL) paired texts" in v.ours
    assert v.label == REPRODUCED
