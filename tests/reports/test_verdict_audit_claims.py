"""Table 3's claims (a), (b), (e) and Table 2's claim at the edges the other verdict tests leave
open: a part of (b) without an interval, the setting of an extension given by its target
length, a row of one seed, and Table 3's gate where a premise was not measured."""

from __future__ import annotations

import math

from report_helpers import tiny_run

from longred_bench.reports.runs import collect_runs
from longred_bench.reports.short_avg import short_categories
from longred_bench.reports.table3 import table3_verdicts
from longred_bench.reports.verdict_rules import Verdict
from longred_bench.reports.verdicts import (
    NOT_COMPARABLE,
    REPRODUCED,
    RunScores,
    extension_setting,
    paper_evidence_a,
    paper_rows,
    verdict_cpt_loses_short,
    verdict_longred_keeps_short,
)

OK = [Verdict(k, "claim", "s", "p", "o", REPRODUCED, "r") for k in ("a", "e")]
EXT = "abf:theta=4e4"


def _run(row: str, short: dict[int, float], ruler: float, seed: int = 0) -> RunScores:
    """A run with the per-document Short scores ``short`` and 20 RULER samples at ``ruler`` or
    ``ruler + 1``."""
    return RunScores(
        "abf:theta=4e5", row, seed, None, ruler,
        short={"General": {"cloze": short}},
        ruler={"niah_single_1": {1024: {i: ruler + (i % 2) for i in range(20)}}},
    )  # fmt: skip


def test_claim_b_short_part_without_an_interval_is_not_comparable_not_undecided() -> None:
    """One shared document gives the short part nothing to resample; the long part holds (the
    same RULER, margin 5): the claim is not comparable, never read as merely undecided."""
    cpt = [_run("cpt", {0: 40.0}, 30.0)]
    longred = [_run("longred-c", {0: 60.0}, 30.0)]
    v = verdict_longred_keeps_short(cpt, longred, "s", "p", "C", premises=OK, cpt_gain=20.0)
    assert v.label == NOT_COMPARABLE
    assert "long part reproduced, short part not comparable" in v.rule


def test_an_extension_given_by_its_target_length_has_no_factor_of_the_papers() -> None:
    """``max_len`` without ``factor``: the factor is unknown (the target over a window the spec
    does not know), not ABF's default x4, so no Table 3 row at x4 is taken as its setting."""
    pe, factor = extension_setting("abf:theta=5e5,max_len=16384")
    assert pe == "ABF" and math.isnan(factor)
    assert paper_rows(pe, factor, "CPT", "Long") == []
    assert "no Table 3 row" in paper_evidence_a(pe, factor)
    # A factor known from the runs overrides it.
    assert extension_setting("abf:theta=5e5,max_len=16384", 4.0) == ("ABF", 4.0)


def test_a_row_of_one_seed_is_not_called_a_mean_of_seeds_and_two_state_their_spread() -> None:
    docs = {i: 40.0 + (i % 3) for i in range(30)}
    original = _run("original", {i: v + 10.0 for i, v in docs.items()}, 0.0)
    one = verdict_cpt_loses_short(original, [_run("cpt", docs, 0.0)], "s", "p")
    assert "mean of" not in one.ours
    two = [_run("cpt", docs, 0.0), _run("cpt", {i: v + 1.0 for i, v in docs.items()}, 0.0, 1)]
    ours = verdict_cpt_loses_short(original, two, "s", "p").ours
    assert "(mean of 2 seeds)" in ours
    assert "Seed spread (Short Avg, max - min): `cpt` 1.00." in ours  # the two seeds' spread


def test_table3_claim_b_without_a_zero_shot_row_is_not_comparable() -> None:
    """(a) measured and reproduced, (e) not measured (no `zero-shot` row): (b) is gated on both,
    so it is not comparable, whatever its own intervals say."""
    recs = tiny_run("original", None, 0.8)
    recs += tiny_run("cpt", EXT, 0.4, ruler=0.5)
    recs += tiny_run("longred-c", EXT, 0.7, ruler=0.5)
    verdicts = {v.key: v for v in table3_verdicts(collect_runs(recs), short_categories(recs))}
    assert verdicts["a"].label == REPRODUCED and "e" not in verdicts
    assert verdicts["b"].label == NOT_COMPARABLE
    assert "not measured" in verdicts["b"].premise


def test_claim_b_floor_comes_before_the_long_interval() -> None:
    """Both rows' RULER under the floor of 5 (CPT 4, LongReD 0.5): the long part is not
    comparable even though its interval lies wholly below -margin; so is the claim, whose short
    part holds."""
    cpt = [_run("cpt", {i: 40.0 + (i % 3) for i in range(30)}, 4.0)]
    longred = [_run("longred-c", {i: 60.0 + (i % 3) for i in range(30)}, 0.0)]
    v = verdict_longred_keeps_short(cpt, longred, "s", "p", "C", premises=OK, cpt_gain=4.0)
    assert v.label == NOT_COMPARABLE
    assert "long part not comparable, short part reproduced" in v.rule
    assert "all below the floor of 5 points" in v.ours
