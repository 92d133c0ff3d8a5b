"""The ablation claims (:mod:`longred_bench.reports.ablation_report`) at the edges the other
ablation tests leave open: the RULER floor never applies to a Short Avg claim, the paper's
effect scales by the *reference* row's score, the evidence states its documents, and two rows
count as distilling the same layers only where each recorded one and the same choice."""

from __future__ import annotations

from typing import Any

from report_helpers import tiny_run

from longred_bench.reports.ablation_report import (
    Ablation,
    Claim,
    ablation_verdicts,
    verdict_direction,
)
from longred_bench.reports.runs import collect_runs
from longred_bench.reports.short_avg import short_categories
from longred_bench.reports.verdict_rules import NOT_COMPARABLE, REPRODUCED, Verdict
from longred_bench.reports.verdict_stats import RunScores

OK = tuple(Verdict(k, "c", "s", "p", "o", REPRODUCED, "r") for k in ("a", "e"))


def _rows(row: str, short: float, seeds: int = 3) -> list[RunScores]:
    """Seeds of a row whose 90 documents score ``short`` +-1; RULER 30 on 40 samples."""
    docs = {i: short + (i % 3) - 1 for i in range(90)}
    per = {i: 100.0 if i < 12 else 0.0 for i in range(40)}
    return [RunScores("abf:theta=2e6", row, s, short, 30.0, short={"General": {"cloze": docs}},
                      ruler={"a": {1024: per}}) for s in range(seeds)]  # fmt: skip


def test_a_short_claim_under_five_points_is_judged_not_floored() -> None:
    lowers = Claim("T", "The variant lowers Short Avg.", "v", "longred-c", "short", -1, "p")
    v = verdict_direction(lowers, _rows("longred-c", 4.0), _rows("v", 2.0), "s", premises=OK)
    assert v.label == REPRODUCED and "below the floor" not in v.ours


def test_the_papers_effect_scales_by_the_reference_row() -> None:
    # The paper's relative change -0.5 times the reference's Short Avg (40): -20.
    lowers = Claim("T", "lowers", "v", "longred-c", "short", -1, "p", relative=-0.5)
    v = verdict_direction(lowers, _rows("longred-c", 40.0), _rows("v", 30.0), "s", premises=OK)
    assert "documents, n=90). The paper's effect, scaled: -20.00." in v.ours


# --- same layers, from records -----------------------------------------------------------------

EXT = "abf:theta=4e4"


def _records(row: str, extension: str | None, short: float, ruler: float | None = None,
             seed: int = 0, train: dict | None = None) -> list[dict[str, Any]]:  # fmt: skip
    return tiny_run(row, extension, short, ruler, seed=seed, train=train)


V = "longred-c-last-layer"
LAYERS = Ablation("t5", "layers", (V,), (), (
    Claim("L", "The default's layers keep more Short Avg.", V, "longred-c", "short", -1, "p",
          layers=True),
))  # fmt: skip


def _layer_verdict(ref_layers: list, mine_layers: list) -> Verdict:
    recs = _records("original", None, 0.8) + _records("zero-shot", EXT, 0.7, ruler=0.1)
    recs += _records("cpt", EXT, 0.4, ruler=0.6)
    for seed, layers in enumerate(ref_layers):
        recs += _records("longred-c", EXT, 0.7, 0.6, seed, {"layers": layers})
    for seed, layers in enumerate(mine_layers):
        recs += _records(V, EXT, 0.5, 0.6, seed, {"layers": layers})
    runs = collect_runs(recs)
    [*_, v] = ablation_verdicts(LAYERS, runs, short_categories(recs))
    assert v.key == "L"
    return v


def test_rows_without_recorded_layers_are_not_the_same_layers() -> None:
    v = _layer_verdict([None, None], [None, None])
    assert v.label == REPRODUCED and "Applied: both rows distilled" not in v.rule
    same = _layer_verdict([[1, 3], [1, 3]], [[1, 3], [1, 3]])
    assert (
        same.label == NOT_COMPARABLE
        and "Applied: both rows distilled the same layers." in same.rule
    )


def test_seeds_that_distilled_different_layers_are_not_one_choice() -> None:
    v = _layer_verdict([[1, 3], [2, 3]], [[1, 3], [2, 3]])
    assert v.label == REPRODUCED and "Applied: both rows distilled" not in v.rule
