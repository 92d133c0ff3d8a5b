"""Pinned behaviour of Table 1's drift claims (:mod:`longred_bench.reports.drift_verdicts`) that
the other drift tests leave open: per-text values that are missing (NaN in a table of records)
or all non-finite, or a run on other texts (the zero-shot one included), make a claim not
comparable; (c) counts the texts every run has, control runs included, pairs seed with seed in
whatever order either row's runs come, and notes a raw change against the claim only where
there is one; (c2) combines its two metrics, reads a rho without an interval as not
comparable, names its bases in order, writes its means with as many digits as 4 significant
ones show, and states how many texts each metric's interval read."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from drift_summaries import N
from drift_summaries import noise as _noise
from drift_summaries import summary as _summary

from longred_bench.metrics.stats import Interval
from longred_bench.reports import drift_verdicts
from longred_bench.reports.drift_verdicts import (
    text_values,
    verdict_base_drifts_more,
    verdict_drift_falls,
)
from longred_bench.reports.verdict_rules import NOT_COMPARABLE, NOT_REPRODUCED

BEFORE = _summary(0.95 + _noise(0, 0.02), 0.4 + _noise(1, 0.05))
CONTROL = [_summary(0.99 + _noise(100 + s, 0.001), 0.02 + _noise(150 + s, 0.001), seed=s)
           for s in range(3)]  # fmt: skip
AFTER = [_summary(np.asarray(BEFORE["text_hidden_cosine"]) + 0.01 + _noise(200 + s, 0.001),
                  np.asarray(BEFORE["text_attention_kl"]) - 0.05 + _noise(250 + s, 0.001),
                  seed=s) for s in range(3)]  # fmt: skip


@pytest.mark.parametrize("missing", [float("nan"), None, "n/a"])
def test_per_text_values_that_are_not_a_list_are_none(missing: Any) -> None:
    """A record whose per-text field is a missing value (NaN in a table of records) has none."""
    assert text_values({"text_hidden_cosine": missing}, "hidden_cosine") is None


def test_per_text_values_none_of_them_finite_are_none() -> None:
    """Only finite values count; a record with none has no per-text values at all."""
    assert text_values({"text_attention_kl": [float("nan"), None]}, "attention_kl") is None
    assert text_values({"text_attention_kl": [float("nan"), 0.5]}, "attention_kl") == {1: 0.5}


def test_c_with_a_run_of_no_finite_values_is_not_comparable() -> None:
    """A control run whose every hidden similarity is NaN gives no interval: not comparable,
    not an error."""
    lost = {**CONTROL[0], "text_hidden_cosine": [float("nan")] * N}
    verdict = verdict_drift_falls("e", BEFORE, AFTER, [lost, *CONTROL[1:]])
    assert verdict.label == NOT_COMPARABLE
    assert "no per-text values" in verdict.ours


def test_c_counts_only_the_texts_every_control_run_has() -> None:
    """The control's second run lacks 3 texts' hidden similarity: the hidden interval reads the
    other 9, which the evidence states (not the 12 of the first CPT run)."""
    gaps = list(CONTROL[1]["text_hidden_cosine"])
    gaps[:3] = [float("nan")] * 3
    control = [CONTROL[0], {**CONTROL[1], "text_hidden_cosine": gaps}, CONTROL[2]]
    verdict = verdict_drift_falls("e", BEFORE, AFTER, control)
    assert "n=9 (hidden similarity) and n=12 (attention KL) paired texts" in verdict.ours


def test_c_notes_no_direction_for_a_raw_change_of_exactly_zero() -> None:
    """CPT's runs average exactly the zero-shot values: a raw change of 0 is not against the
    claim's direction, so no such note is added."""
    same = [{**BEFORE, "seed": s} for s in range(2)]
    verdict = verdict_drift_falls("e", BEFORE, same, CONTROL)
    assert "raw change after CPT +0 (mean of its seeds);" in verdict.ours
    assert "against the claim's direction" not in verdict.ours


def _bases(hidden: tuple[float, ...], kl: tuple[float, ...], scale: float = 0.005):
    """Zero-shot summaries of three ABF bases around the given means, keyed by base."""
    return {
        base: _summary(h + _noise(i, scale), k + _noise(i + 20, scale))
        for i, (base, h, k) in enumerate(zip((4e5, 2e6, 1e7), hidden, kl, strict=True))
    }


def test_c2_combines_both_metrics() -> None:
    """Hidden similarity falls with the base as claimed, attention KL falls too (against the
    claim): one refuted metric refutes the claim."""
    verdict = verdict_base_drifts_more(_bases((0.98, 0.96, 0.94), (0.4, 0.3, 0.2)))
    assert "(reproduced)" in verdict.ours and "(not reproduced)" in verdict.ours
    assert verdict.label == NOT_REPRODUCED
    mirrored = verdict_base_drifts_more(_bases((0.94, 0.96, 0.98), (0.2, 0.3, 0.4)))
    assert mirrored.label == NOT_REPRODUCED


def test_c2_a_rho_without_an_interval_is_not_comparable(monkeypatch) -> None:
    """Rho is defined on the data but not in most resamples (an interval of NaN ends): the
    metric is not comparable, whatever its estimate."""
    monkeypatch.setattr(
        drift_verdicts,
        "bootstrap_rank_trend_ci",
        lambda *args, **kwargs: Interval(-1.0, float("nan"), float("nan")),
    )
    verdict = verdict_base_drifts_more(_bases((0.98, 0.96, 0.94), (0.2, 0.3, 0.4)))
    assert verdict.label == NOT_COMPARABLE
    assert verdict.ours.count("(not comparable)") == 2


def test_c2_means_read_at_four_significant_digits() -> None:
    """Means that 3 digits would already tell apart are still written with 4."""
    verdict = verdict_base_drifts_more(_bases((0.9512, 0.9634, 0.9756), (0.2, 0.3, 0.4), 0.0))
    assert "hidden similarity 0.9512, 0.9634, 0.9756:" in verdict.ours


def test_c_raw_change_is_the_mean_over_cpt_seeds() -> None:
    """Two CPT seeds move hidden similarity by +0.01 and +0.03 on every text: the raw change
    printed is their mean, +0.02, not the first seed's."""
    before_h = np.asarray(BEFORE["text_hidden_cosine"])
    after = [_summary(before_h + shift, BEFORE["text_attention_kl"], seed=s)
             for s, shift in enumerate((0.01, 0.03))]  # fmt: skip
    verdict = verdict_drift_falls("e", BEFORE, after, CONTROL)
    assert "hidden similarity" in verdict.ours
    assert "raw change after CPT +0.02 (mean of its seeds)" in verdict.ours


def test_c2_needs_every_base_on_the_same_texts() -> None:
    """One base measured at another length: its drift is not comparable with the others'."""
    bases = _bases((0.98, 0.96, 0.94), (0.2, 0.3, 0.4))
    assert verdict_base_drifts_more(bases).label != NOT_COMPARABLE
    bases[2e6] = {**bases[2e6], "seq_len": 512}
    verdict = verdict_base_drifts_more(bases)
    assert verdict.label == NOT_COMPARABLE
    assert "no per-text values on the same texts for every base" in verdict.ours


def test_c2_reads_and_states_the_texts_every_base_has() -> None:
    """The middle base has no finite hidden similarity on text 0: hidden similarity is ranked
    over the other 11 texts at every base, and the evidence says so beside KL's 12."""
    bases = _bases((0.98, 0.96, 0.94), (0.2, 0.3, 0.4))
    hidden = list(bases[2e6]["text_hidden_cosine"])
    hidden[0] = float("nan")
    bases[2e6] = {**bases[2e6], "text_hidden_cosine": hidden}
    verdict = verdict_base_drifts_more(bases)
    assert "hidden similarity" in verdict.ours and "(not comparable)" not in verdict.ours
    assert verdict.ours.endswith(
        "bootstrap over n=11 (hidden similarity) and n=12 (attention KL) texts."
    )


def test_c_needs_the_zero_shot_run_on_the_same_texts() -> None:
    """The zero-shot drift measured at another length: CPT's change from it is not comparable."""
    assert verdict_drift_falls("e", BEFORE, AFTER, CONTROL).label != NOT_COMPARABLE
    moved = {**BEFORE, "seq_len": 512}
    verdict = verdict_drift_falls("e", moved, AFTER, CONTROL)
    assert verdict.label == NOT_COMPARABLE
    assert "no per-text values on the same texts" in verdict.ours


def test_c_pairs_seeds_whatever_order_the_cpt_runs_come_in() -> None:
    """Each seed moves both rows alike; CPT's runs listed from the highest seed are still
    compared seed by seed, the same verdict and evidence as in seed order."""
    swing = (0.0, 0.03, -0.03)
    control = [_summary(0.99 + w + _noise(600 + s, 0.001), 0.02 + w + _noise(650 + s, 0.001),
                        seed=s) for s, w in enumerate(swing)]  # fmt: skip
    after = [_summary(np.asarray(BEFORE["text_hidden_cosine"]) + 0.01 + w + _noise(700 + s, 0.001),
                      np.asarray(BEFORE["text_attention_kl"]) - 0.05 + w
                      + _noise(750 + s, 0.001), seed=s)
             for s, w in enumerate(swing)]  # fmt: skip
    ordered = verdict_drift_falls("e", BEFORE, after, control)
    assert "(paired by seed)" in ordered.ours
    backwards = verdict_drift_falls("e", BEFORE, after[::-1], control)
    assert (backwards.label, backwards.ours) == (ordered.label, ordered.ours)


def test_c2_scope_lists_the_bases_in_order() -> None:
    """Bases given in any order are named from the smallest."""
    bases = _bases((0.98, 0.96, 0.94), (0.2, 0.3, 0.4))
    shuffled = {b: bases[b] for b in (1e7, 4e5, 2e6)}
    assert verdict_base_drifts_more(shuffled).scope == "ABF bases 4e+05, 2e+06, 1e+07"
