"""LinearARD's claims (:mod:`longred_bench.reports.linearard_verdicts`) at their premises: a
(L2) part is not comparable at the RULER floor only where *both* the row and the baseline score
below it, and (L1) needs several seeds of the best baseline as well as of the row."""

from __future__ import annotations

from longred_bench.reports.linearard_verdicts import verdict_long, verdict_recovery
from longred_bench.reports.verdict_rules import NOT_COMPARABLE, NOT_REPRODUCED, REPRODUCED
from longred_bench.reports.verdict_stats import RunScores


def _run(row: str, hits: int, seed: int = 0) -> RunScores:
    """RULER: the first ``hits`` of 40 samples (2.5 points each)."""
    per = {i: 100.0 if i < hits else 0.0 for i in range(40)}
    docs = {i: 50.0 + (i % 3) for i in range(60)}
    return RunScores("pi:factor=2", row, seed, 50.0, 2.5 * hits,
                     short={"General": {"cloze": docs}},
                     ruler={"niah_single_1": {512: per}})  # fmt: skip


def test_a_row_under_the_floor_against_a_baseline_above_it_is_judged() -> None:
    row = [_run("linearard", 1, s) for s in range(2)]  # RULER 2.5: under the floor of 5
    base = {"cpt": [_run("cpt", 12, s) for s in range(3)]}  # RULER 30
    v = verdict_long(row, base, "s")
    assert v.label == NOT_REPRODUCED
    assert "both below the floor" not in v.ours
    assert "(n=40, not reproduced)" in v.ours


def test_recovery_against_a_best_baseline_of_one_seed_is_not_comparable() -> None:
    row = [_run("linearard", 12, s) for s in range(2)]
    base = {"cpt": [_run("cpt", 12)]}  # one seed: its seed variance is not in the interval
    v = verdict_recovery(row, base, "s")
    assert v.label == NOT_COMPARABLE
    assert "Seed premise failed: `cpt` trained with one seed" in v.ours
    # The same baseline with two seeds is judged (51.0 is above 98.3% of 51.0).
    judged = verdict_recovery(row, {"cpt": [_run("cpt", 12, s) for s in range(2)]}, "s")
    assert judged.label == REPRODUCED and "Seed premise" not in judged.ours
