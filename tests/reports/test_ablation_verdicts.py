"""The direction claims of LongReD's ablation tables (``reports.ablation_report``) on hand-built
``RunScores``: each label of the rule, the premise gate, the paper's scaled effect and the
same-layers case; and the three tables' claims name rows of their own profiles."""

from __future__ import annotations

from longred_bench.reports.ablation_report import Claim, verdict_direction
from longred_bench.reports.ablation_tables import ABLATIONS
from longred_bench.reports.verdict_rules import Verdict
from longred_bench.reports.verdict_stats import RunScores
from longred_bench.reports.verdicts import (
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    REPRODUCED,
    UNDECIDED,
)

OK = (
    Verdict("a", "c", "s", "p", "o", REPRODUCED, "r"),
    Verdict("e", "c", "s", "p", "o", REPRODUCED, "r"),
)


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


def test_direction_rule_labels() -> None:
    ref = _rows("longred-c", (12, 12, 13))
    label = lambda claim, rows: verdict_direction(claim, ref, rows, "s", premises=OK).label  # noqa: E731
    assert label(CLAIM, _rows("v", (4, 4, 5))) == REPRODUCED
    assert label(CLAIM, _rows("v", (20, 20, 21))) == NOT_REPRODUCED  # the other side
    assert label(CLAIM, _rows("v", (2, 12, 22))) == UNDECIDED  # seeds disagree: wide interval
    raised = Claim("T", "raises", "v", "longred-c", "ruler", 1, "p")
    assert label(raised, _rows("v", (20, 20, 21))) == REPRODUCED
    # A fall of 80% (the paper's, scaled) is ruled out by an interval around 0: not reproduced.
    big = Claim("T", "lowers", "v", "longred-c", "ruler", -1, "p", relative=-0.8)
    assert label(big, _rows("v", (12, 12, 13))) == NOT_REPRODUCED
    assert label(CLAIM, _rows("v", (12, 12, 13))) == UNDECIDED


def test_premise_gate_and_same_layers_make_it_not_comparable() -> None:
    ref = _rows("longred-c", (12, 12, 13))
    failed = (OK[0], Verdict("e", "c", "s", "p", "o", NOT_REPRODUCED, "r"))
    gated = verdict_direction(CLAIM, ref, _rows("v", (4, 4, 5)), "s", premises=failed)
    assert gated.label == NOT_COMPARABLE and "(e) not reproduced" in gated.premise
    unmeasured = verdict_direction(CLAIM, ref, _rows("v", (4, 4, 5)), "s")
    assert unmeasured.label == NOT_COMPARABLE and "not measured" in unmeasured.premise
    layer_claim = Claim("T", "KL layers beat v.", "v", "longred-c", "ruler", -1, "p", layers=True)
    same = verdict_direction(layer_claim, ref, _rows("v", (4, 4, 5)), "s", True, OK)
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
