"""LongRecipe's verdicts at the edges the rule tests leave open: (R1) without paired RULER
samples, the paper's gain taken at the setting of the smaller relative (not absolute) gain,
(R2)/(R3) without baselines or with a refuting baseline first, and (R4)'s spread of one run of
two steps, its message without timings and its bound of 0.175; the evidence of each, naming
every row's own value and the runs and steps timed."""

from __future__ import annotations

import numpy as np
import pytest

import longred_bench.reports.longrecipe_verdicts as lrv
from longred_bench.metrics.stats import RunSteps
from longred_bench.reports.longrecipe_verdicts import (
    paper_ruler_gain,
    verdict_beats,
    verdict_compute,
    verdict_matches_full_length,
)
from longred_bench.reports.verdict_rules import NOT_COMPARABLE, NOT_REPRODUCED, REPRODUCED
from longred_bench.reports.verdict_stats import RunScores


def _seeds(row: str, short: float, hits: int, ruler: bool = True) -> list[RunScores]:
    """Three seeds: Short on 60 documents at ``short`` +-1; RULER the first ``hits`` of 100
    samples (no per-sample RULER without ``ruler``)."""
    docs = {i: short + (i % 3) - 1 for i in range(60)}
    per = {"niah_single_1": {1024: {i: 100.0 * (i < hits) for i in range(100)}}} if ruler else {}
    return [
        RunScores("abf:theta=2e6", row, s, short, float(hits), {"General": {"cloze": docs}}, per)
        for s in range(3)
    ]


def _timed(per_step: float, runs: int = 3, steps: int = 64, seed: int = 0) -> list[RunSteps]:
    """``runs`` runs of ``steps`` steps of 1000 tokens at ``per_step`` seconds +-1%."""
    rng = np.random.default_rng(seed)
    return [
        RunSteps(list(per_step * (1 + 0.01 * rng.uniform(-1, 1, steps))), [1000.0] * steps)
        for _ in range(runs)
    ]


def test_matching_full_length_without_paired_ruler_samples_is_not_comparable() -> None:
    """The premise holds, but the row has no per-sample RULER to pair with CPT's: no interval,
    not comparable, and the evidence says so."""
    zero, cpt = _seeds("zero-shot", 50, 2), _seeds("cpt", 50, 30)
    v = verdict_matches_full_length(_seeds("longrecipe", 50, 29, ruler=False), cpt, zero, "s")
    assert v.label == NOT_COMPARABLE and "passed" in v.premise
    assert "no per-sample RULER scores to pair" in v.ours


def test_the_papers_gain_is_taken_where_it_is_smallest_relative_to_the_baseline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """80K: +2 over 10 (20%); 128K: +5 over 50 (10%): the 128K gain, the smaller relative one,
    though the larger in points."""
    table = (
        ("80K", "PoSE", 0, 10.0),
        ("80K", "LongRecipe", 0, 12.0),
        ("128K", "PoSE", 0, 50.0),
        ("128K", "LongRecipe", 0, 55.0),
    )
    monkeypatch.setattr(lrv, "PAPER_TABLE1", table)
    assert paper_ruler_gain("pose") == pytest.approx((5.0, 50.0))


def test_beating_no_baseline_is_not_comparable() -> None:
    """Without a PoSE or RPES row there is nothing to beat: not comparable, said so."""
    v = verdict_beats(_seeds("longrecipe", 53, 30), {}, "s", "ruler")
    assert v.label == NOT_COMPARABLE and "no baseline to compare with" in v.ours


@pytest.mark.parametrize("what", ["ruler", "short"])
def test_a_refuting_first_baseline_refutes_the_claim_though_the_last_is_beaten(what) -> None:
    """PoSE (first) beats LongRecipe, RPES (last) is beaten: the claim is not reproduced."""
    mine = _seeds("longrecipe", 53, 30)
    base = {"pose": _seeds("pose", 56, 40), "rpes": _seeds("rpes", 50, 5)}
    assert verdict_beats(mine, {"rpes": base["rpes"]}, "s", what).label == REPRODUCED
    assert verdict_beats(mine, base, "s", what).label == NOT_REPRODUCED


def test_one_run_of_two_timed_steps_has_a_spread() -> None:
    """A row of one run with two per-step timings is judged, not refused for lack of spread."""
    mine = [RunSteps([1.0, 1.02], [1000.0, 1000.0])]
    cpt = [RunSteps([1.0, 0.98], [1000.0, 1000.0])]
    v = verdict_compute(mine, cpt, 0.15, "s")
    assert v.label == REPRODUCED and "no spread" not in v.ours


def test_compute_without_timings_says_none_were_recorded() -> None:
    """A row without timings is not comparable for that reason, not for a lack of spread."""
    for mine, cpt in (([], _timed(1.0)), (_timed(1.0), [])):
        v = verdict_compute(mine, cpt, 0.15, "s")
        assert v.label == NOT_COMPARABLE
        assert v.ours == "no training timings (or sample lengths) recorded."


@pytest.mark.parametrize(("ratio", "label"), [(0.16, REPRODUCED), (0.19, NOT_REPRODUCED)])
def test_compute_is_judged_against_0_175(ratio: float, label: str) -> None:
    """About 85% less compute allows up to 0.175 of CPT's per sequence: 0.16 reads reproduced,
    0.19 (entirely above) not reproduced."""
    v = verdict_compute(_timed(1.0, seed=1), _timed(1.0), ratio, "s")
    assert v.label == label and "entirely below 0.175" in v.rule


def test_matching_full_length_evidence_names_each_rows_ruler() -> None:
    """(R1) says LongReD's RULER, then CPT's; where the premise fails, the premise's evidence."""
    zero, cpt = _seeds("zero-shot", 50, 2), _seeds("cpt", 50, 30)
    v = verdict_matches_full_length(_seeds("longrecipe", 50, 29), cpt, zero, "s")
    assert "RULER `longrecipe` 29.00 (mean of 3 seeds) - `cpt` 30.00: " in v.ours
    flat = verdict_matches_full_length(_seeds("longrecipe", 50, 3), zero, zero, "s")
    assert flat.ours.startswith("premise (e): ") and "Nothing learned to match." in flat.ours


def test_beating_evidence_names_the_rows_value_then_the_baselines() -> None:
    """(R2) says LongRecipe's RULER, then PoSE's."""
    v = verdict_beats(_seeds("longrecipe", 53, 30), {"pose": _seeds("pose", 50, 5)}, "s", "ruler")
    assert v.ours.startswith("RULER `longrecipe` 30.00 vs `pose` 5.00: ")


def test_compute_evidence_counts_the_runs_and_steps_timed() -> None:
    """(R4) says each row's runs, their steps, and how many were timed as a total only."""
    cpt = [*_timed(1.0, runs=2), RunSteps([64.0], [64000.0])]
    v = verdict_compute(_timed(1.0, seed=1), cpt, 0.15, "s")
    assert "`longrecipe` 3 run(s), 192 step(s) (per-step timings), " in v.ours
    assert "`cpt` 3 run(s), 129 step(s) (1 of them timed as a total only)" in v.ours
