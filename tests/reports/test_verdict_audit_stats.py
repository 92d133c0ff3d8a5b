"""The seed spreads and means of :mod:`longred_bench.reports.verdict_stats` where rows have no
per-document scores (records of older runs): they fall back to the tidy averages of the metric
asked for, and a verdict without an interval still states them; a spread of 0 is stated; the
paper's recovered effect needs both scores."""

from __future__ import annotations

import pytest

from longred_bench.reports.verdict_rules import recovered_effect
from longred_bench.reports.verdict_stats import RunScores, compared_means, seed_spread, spread_text
from longred_bench.reports.verdicts import NOT_COMPARABLE, verdict_cpt_loses_short


def _tidy(row: str, seed: int, short: float, ruler: float) -> RunScores:
    """A run known by its tidy Short Avg and RULER average only."""
    return RunScores("abf:theta=4e5", row, seed, short, ruler)


def test_seed_spread_without_per_document_scores_is_of_the_metric_asked_for() -> None:
    runs = [_tidy("cpt", 0, 50.0, 10.0), _tidy("cpt", 1, 51.0, 14.0)]
    assert seed_spread(runs, "ruler") == pytest.approx(4.0)
    assert seed_spread(runs, "short") == pytest.approx(1.0)


def test_a_verdict_without_shared_documents_states_the_tidy_averages() -> None:
    original = _tidy("original", 0, 50.0, 0.0)
    cpt = [_tidy("cpt", 0, 40.0, 0.0), _tidy("cpt", 1, 42.0, 0.0)]
    assert compared_means([original], cpt, "short") == (50.0, pytest.approx(41.0))
    v = verdict_cpt_loses_short(original, cpt, "s", "p")
    assert v.label == NOT_COMPARABLE
    assert "Short Avg `cpt` 41.00 (mean of 2 seeds) vs `original` 50.00" in v.ours
    assert "no per-document Short scores to pair" in v.ours


def test_a_spread_of_zero_is_stated() -> None:
    # Seeds that agree exactly are evidence too: 0.00 is shown, not dropped like an unknown.
    assert (
        spread_text({"cpt": 0.0, "control": None})
        == " Seed spread (Short Avg, max - min): `cpt` 0.00."
    )
    assert spread_text({"control": None}) == ""


def test_the_papers_recovered_effect_needs_both_scores() -> None:
    assert recovered_effect(0.8, 50.0, None) is None
    assert recovered_effect(0.8, None, 40.0) is None
    assert recovered_effect(0.8, 50.0, 40.0) == pytest.approx(8.0)
