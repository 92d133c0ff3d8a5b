"""The direction claims of LongReD's ablation tables (``reports.ablation_report``) on hand-built
``RunScores``: each outcome of the rule, the seed rule, the RULER floor and the same-layers case;
and the three tables' claims name rows of their own profiles."""

from __future__ import annotations

from longred_bench.reports.ablation_report import Claim, verdict_direction
from longred_bench.reports.ablation_tables import ABLATIONS
from longred_bench.reports.verdict_stats import RunScores
from longred_bench.reports.verdicts import NOT_COMPARABLE, NOT_REPRODUCED, REPRODUCED


def _rows(row: str, hits: tuple[int, ...]) -> list[RunScores]:
    """One run per seed; RULER: the first ``h`` of 40 samples of each of two tasks."""
    runs = []
    for seed, h in enumerate(hits):
        per = {i: 100.0 if i < h else 0.0 for i in range(40)}
        docs = {i: 50.0 + (i % 3) for i in range(100)}
        runs.append(RunScores("abf:theta=2e6", row, seed, 51.0, 2.5 * h,
                              short={"General": {"cloze": docs}},
                              ruler={"a": {1024: per}, "b": {1024: dict(per)}}))  # fmt: skip
    return runs


CLAIM = Claim("T", "The variant lowers RULER.", "v", "longred-c", "ruler", -1, "p")


def test_direction_rule_outcomes() -> None:
    ref = _rows("longred-c", (12, 12, 13))
    assert verdict_direction(CLAIM, ref, _rows("v", (4, 4, 5)), "s").label == REPRODUCED
    assert verdict_direction(CLAIM, ref, _rows("v", (20, 20, 21)), "s").label == NOT_REPRODUCED
    raised = Claim("T", "raises", "v", "longred-c", "ruler", 1, "p")
    assert verdict_direction(raised, ref, _rows("v", (20, 20, 21)), "s").label == REPRODUCED


def test_seed_spread_floor_and_same_layers_make_it_not_comparable() -> None:
    ref = _rows("longred-c", (12, 12, 13))
    noisy = verdict_direction(CLAIM, ref, _rows("v", (2, 12, 22)), "s")
    assert noisy.label == NOT_COMPARABLE and "seed spread" in noisy.rule
    low = verdict_direction(CLAIM, _rows("longred-c", (1, 1, 1)), _rows("v", (0, 0, 0)), "s")
    assert low.label == NOT_COMPARABLE and "floor" in low.rule
    layer_claim = Claim("T", "KL layers beat v.", "v", "longred-c", "ruler", -1, "p", layers=True)
    same = verdict_direction(layer_claim, ref, _rows("v", (4, 4, 5)), "s", same_layers=True)
    assert same.label == NOT_COMPARABLE and "same layers" in same.rule


def test_same_layers_only_matter_to_claims_between_layer_choices() -> None:
    for name, ablation in ABLATIONS.items():
        assert all(c.layers == (name == "table5") for c in ablation.claims), name


def test_every_claim_compares_rows_of_its_table() -> None:
    for name, ablation in ABLATIONS.items():
        from profile_helpers import grid_of

        rows = set(grid_of(name).rows)
        assert set(ablation.rows) < rows
        for claim in ablation.claims:
            assert {claim.row, claim.reference} <= rows, (name, claim.key)
