"""The RULER floor (``reports.verdict_rules.RULER_FLOOR``) in every rule that compares RULER:
two rows that both score below it are not comparable, whatever their interval says, and a row
at or above it keeps the comparison. Claims (e), (b)'s long part, the ablations' RULER claims,
LinearARD's (L2) and LongRecipe's (R2), on hand-built ``RunScores``."""

from __future__ import annotations

from longred_bench.reports.ablation_report import Claim, verdict_direction
from longred_bench.reports.linearard_verdicts import verdict_long
from longred_bench.reports.long_verdict import verdict_cpt_learns_long
from longred_bench.reports.longrecipe_verdicts import verdict_beats
from longred_bench.reports.verdict_rules import (
    NOT_COMPARABLE,
    REPRODUCED,
    RULER_FLOOR,
    Verdict,
    below_ruler_floor,
)
from longred_bench.reports.verdict_stats import RunScores
from longred_bench.reports.verdicts import verdict_longred_keeps_short

N = 400  # RULER samples a run: 1 hit = 0.25 points


def _run(row: str, hits: int, seed: int = 0, short: float = 50.0) -> RunScores:
    """Short: 200 documents at ``short`` +-1; RULER: the first ``hits`` of :data:`N` samples."""
    docs = {i: short + (i % 3) - 1 for i in range(200)}
    per = {i: 100.0 if i < hits else 0.0 for i in range(N)}
    return RunScores("pi:factor=2", row, seed, short, 100.0 * hits / N,
                     short={"General": {"cloze": docs}},
                     ruler={"niah_single_1": {512: per}})  # fmt: skip


def _seeds(row: str, hits: int, short: float = 50.0) -> list[RunScores]:
    return [_run(row, hits, s, short) for s in range(3)]


OK = [Verdict(k, "c", "s", "p", "o", REPRODUCED, "r") for k in ("a", "e")]


def test_the_floor_is_every_compared_mean_below_it() -> None:
    assert below_ruler_floor(0.0, RULER_FLOOR - 0.01)
    assert not below_ruler_floor(0.0, RULER_FLOOR)
    on_floor = [RULER_FLOOR - 1e-13, RULER_FLOOR + 1e-13]  # one mean, two float sum orders
    assert not any(below_ruler_floor(m) for m in on_floor)
    assert not below_ruler_floor(None, 1.0) and not below_ruler_floor()


def test_claim_e_between_two_rows_under_the_floor_is_not_comparable() -> None:
    # 4.5 points against 0 on 400 samples: the interval clears 0, but neither row is at 5.
    under = verdict_cpt_learns_long(_run("zero-shot", 0), _seeds("cpt", 18), "s")
    assert under.label == NOT_COMPARABLE and "below the floor of 5 points" in under.ours
    assert "floor" in under.rule
    over = verdict_cpt_learns_long(_run("zero-shot", 0), _seeds("cpt", 24), "s")  # 6 points
    assert over.label == REPRODUCED


def test_claim_b_long_part_under_the_floor_makes_the_claim_not_comparable() -> None:
    def b(base_hits: int, longred_hits: int) -> Verdict:
        return verdict_longred_keeps_short(
            _seeds("mix-cpt", base_hits, 40.0), _seeds("longred-c", longred_hits, 45.0), "s", "p",
            "C", premises=OK, cpt_gain=20.0)  # fmt: skip

    assert b(16, 15).label == NOT_COMPARABLE  # 4.0 and 3.75: both under the floor
    assert "long part not comparable" in b(16, 15).rule
    assert b(40, 39).label == REPRODUCED  # 10 and 9.75: within the margin, Short above


def test_ablation_ruler_claim_under_the_floor_is_not_comparable() -> None:
    lowers = Claim("T", "The variant lowers RULER.", "v", "longred-c", "ruler", -1, "p")
    under = verdict_direction(lowers, _seeds("longred-c", 18), _seeds("v", 0), "s", premises=OK)
    assert under.label == NOT_COMPARABLE and "floor" in under.ours
    over = verdict_direction(lowers, _seeds("longred-c", 40), _seeds("v", 0), "s", premises=OK)
    assert over.label == REPRODUCED
    # A Short Avg claim knows no RULER floor.
    short = Claim("S", "The variant lowers Short Avg.", "v", "longred-c", "short", -1, "p")
    low = verdict_direction(short, _seeds("longred-c", 0, 50.0), _seeds("v", 0, 45.0), "s",
                            premises=OK)  # fmt: skip
    assert low.label == REPRODUCED


def test_linearard_and_longrecipe_long_claims_apply_the_floor_per_baseline() -> None:
    base = {"cpt": _seeds("cpt", 4), "longred-c": _seeds("longred-c", 4)}
    assert verdict_long(_seeds("linearard", 18), base, "s").label == NOT_COMPARABLE
    assert verdict_long(_seeds("linearard", 40), base, "s").label == REPRODUCED
    r2 = verdict_beats(_seeds("longrecipe", 18), {"pose": _seeds("pose", 4)}, "s", "ruler")
    assert r2.label == NOT_COMPARABLE and "floor" in r2.ours
    r3 = verdict_beats(_seeds("longrecipe", 18, 55.0), {"pose": _seeds("pose", 4)}, "s", "short")
    assert r3.label == REPRODUCED  # Short Avg: no floor
