"""The paper side of Table 3's verdicts: the setting of an extension the RoPE parser does not
know, the original's spec refused, Table 3 rows of every data column when none is named, the
CPT twin of a LongReD row taken at the same position extension and data column, no recovered
fraction where the paper's CPT lost nothing against the original, and claim (b)'s evidence
naming each row's own Short Avg and RULER."""

from __future__ import annotations

import dataclasses
import math

import pytest

import longred_bench.reports.verdicts as verdicts
from longred_bench.errors import UserError
from longred_bench.reports.verdict_rules import Verdict
from longred_bench.reports.verdicts import (
    REPRODUCED,
    RunScores,
    extension_setting,
    paper_evidence_b,
    paper_recovered_b,
    paper_rows,
    verdict_longred_keeps_short,
)


def test_an_extension_the_parser_does_not_know_keeps_its_name_and_the_runs_factor() -> None:
    """A method outside the RoPE specs (a trained extension's own name) is its own setting: the
    factor the runs give is kept, and without one the factor is unknown (NaN)."""
    assert extension_setting("my-extension", 2.0) == ("my-extension", 2.0)
    pe, factor = extension_setting("my-extension")
    assert pe == "my-extension" and math.isnan(factor)


def test_the_original_has_no_extension_setting() -> None:
    """The original's rows (no extension) are refused, not given a made-up setting."""
    with pytest.raises(UserError, match="no extension setting"):
        extension_setting(None)


def test_paper_rows_without_a_data_column_take_every_column() -> None:
    """``data=None`` takes the long-only and the mixed-data CPT rows of the setting (window x4:
    Llama-3-8B's 32K and Mistral-7B's 128K)."""
    rows = paper_rows("ABF", 4.0, "CPT", None)
    assert sorted((r.model, r.data) for r in rows) == [
        ("Llama-3-8B", "Long"),
        ("Llama-3-8B", "Mix"),
        ("Mistral-7B-v0.3", "Long"),
        ("Mistral-7B-v0.3", "Mix"),
    ]


def test_the_cpt_twin_of_a_longred_row_is_at_the_same_position_extension() -> None:
    """At Llama-3-8B 32K, PI's LongReD-C is compared with PI's CPT (49.36), not ABF's (51.00)."""
    recovered = (53.94 - 49.36) / (55.16 - 49.36)
    assert paper_recovered_b("PI", 4.0, "LongReD-C", "Long") == pytest.approx(recovered)
    assert "vs CPT 49.36" in paper_evidence_b("PI", 4.0, "LongReD-C")


@pytest.mark.parametrize("cpt_short", [55.16, 56.0])
def test_no_recovered_fraction_where_the_papers_cpt_lost_nothing(
    cpt_short: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A paper CPT row as good as the original or better has no loss to recover a fraction of:
    the fraction is None, not a division by zero or a negative loss."""
    table = tuple(
        dataclasses.replace(r, short=cpt_short)
        if (r.model, r.window, r.pe, r.method, r.data) == ("Llama-3-8B", "32K", "PI", "CPT", "Long")
        else r
        for r in verdicts.TABLE3
    )
    monkeypatch.setattr(verdicts, "TABLE3", table)
    assert paper_recovered_b("PI", 4.0, "LongReD-C", "Long") is None
    assert paper_recovered_b("PI", 4.0, "LongReD-C", "Mix") is not None


def test_paper_evidence_against_the_data_matched_cpt_reads_its_mix_row() -> None:
    """LongReD-C against the Mix CPT at Llama-3-8B 32K ABF: Short 54.85 vs 45.86 and RULER
    84.98 vs 85.04, each difference LongReD's minus CPT's."""
    text = paper_evidence_b("ABF", 4.0, "LongReD-C", "Mix")
    assert "Short 54.85 vs Mix CPT 45.86 (+8.99), RULER 84.98 vs 85.04 (-0.06)" in text


def _run(row: str, short: float, ruler: float) -> RunScores:
    """60 documents at ``short`` +-1 and 20 RULER samples at ``ruler`` +-1."""
    return RunScores(
        "abf:theta=4e5", row, 0, short, ruler,
        short={"General": {"cloze": {i: short + (i % 3) - 1 for i in range(60)}}},
        ruler={"niah_single_1": {1024: {i: ruler + 2 * (i % 2) - 1 for i in range(20)}}},
    )  # fmt: skip


def test_claim_b_evidence_names_each_rows_short_avg_and_ruler() -> None:
    """The evidence gives LongReD's and the baseline's Short Avg and RULER, each in its place."""
    premises = [Verdict(k, "claim", "s", "p", "o", REPRODUCED, "r") for k in ("a", "e")]
    v = verdict_longred_keeps_short(
        [_run("cpt", 20.0, 31.0)], [_run("longred-c", 40.0, 30.0)], "s", "p", "C",
        premises=premises, cpt_gain=20.0,
    )  # fmt: skip
    assert v.label == REPRODUCED
    assert v.ours.startswith(
        "`longred-c` Short Avg 40.00, RULER 30.00; `cpt` Short Avg 20.00, RULER 31.00"
    )
