"""Numbers and labels of several report builders, by hand: Table 1 labels (c2) where two ABF
bases were measured, Table 10's cost per token is mean seconds over mean tokens, LongRecipe's
compute claim has a spread from two runs timed as totals, compare's RULER sample count is per
task and length, and the ablations carry the paper's relative change of the row."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_helpers import PROV

from longred_bench.metrics.stats import RunSteps
from longred_bench.reports.verdict_rules import REPRODUCED


def _drift(extension: str, theta: float, hidden: float, kl: float) -> list[dict]:
    common = {"original": "tiny-base", "extension": extension, "texts": "brown", "seq_len": 256,
              "num_texts": 4, "num_tokens": 1024, "provenance": PROV}  # fmt: skip
    layers = [{"kind": "drift_layer", **common, "layer": i, "hidden_cosine": hidden,
               "attention_kl": kl} for i in (1, 2)]  # fmt: skip
    summary = {"kind": "drift_summary", **common,
               "rope_parameters": {"rope_type": "default", "rope_theta": theta},
               "max_position_embeddings": 1024, "mean_hidden_cosine": hidden,
               "last_hidden_cosine": hidden, "mean_attention_kl": kl, "top_m": 1,
               "selected_layers": [2]}  # fmt: skip
    return [*layers, summary]


def test_table1_labels_claim_c2_where_two_abf_bases_were_measured(tmp_path: Path) -> None:
    from longred_bench.reports.table1 import build_table1

    records = _drift("abf:theta=4e4", 4e4, 0.9, 0.2) + _drift("abf:theta=8e4", 8e4, 0.8, 0.3)
    md = build_table1(records, tmp_path, profile="tiny", command="c")[0].read_text()
    assert "2 ABF base(s) measured: a rank trend needs at least 3." in md


def test_table10_cost_per_token_is_mean_seconds_over_mean_tokens() -> None:
    from longred_bench.reports.table10_report import Cost

    cost = Cost("abf:theta=2e6", "cpt", (10.0, 10.0), (1.0, 4.0), (1.0, 1.0))
    assert cost.per_token == pytest.approx(4.0)  # 10 / 2.5; a mean of ratios would be 6.25


def test_longrecipe_compute_from_runs_timed_as_totals_has_a_spread() -> None:
    # Only a row of one run with its total alone lacks a spread. Three runs a row, 64 to 66 s:
    # the log rates' variance over 3 at t's quantile for 2 degrees of freedom, both rows in
    # quadrature, gives 0.15 x exp(+-0.054) = [0.142, 0.158], under the bound 0.175: reproduced.
    from longred_bench.reports.longrecipe_verdicts import verdict_compute

    runs = [RunSteps([s], [64000.0]) for s in (64.0, 65.0, 66.0)]
    verdict = verdict_compute(runs, runs, 0.15, "s")
    assert verdict.label == REPRODUCED and "no spread" not in verdict.ours


def test_compare_counts_ruler_samples_per_task_and_length() -> None:
    # a task's length-None record counts its documents over every length: 6 over 2 lengths
    from longred_bench.reports.compare_report import sample_sizes

    def record(length: int | None, n: int) -> dict:
        where = {"kind": "eval", "label": "original", "suite": "ruler", "task": "niah_single_1"}
        return {**where, "metric": "score", "length": length, "n_samples": n, "n_over_length": 0}

    text = sample_sizes([record(None, 6), record(512, 3), record(1024, 3)])
    assert "RULER 3 sample(s) per task and length" in text


def test_the_ablations_carry_the_papers_relative_change_of_the_row() -> None:
    # (row - reference) / reference: Table 4, 84.98 -> 83.61; Table 6, 84.98 -> 75.54
    from longred_bench.reports.ablation_tables import TABLE4_ABLATION, TABLE6_ABLATION

    t4a = next(c for c in TABLE4_ABLATION.claims if c.key == "T4a")
    assert t4a.relative == pytest.approx(83.61 / 84.98 - 1) == pytest.approx(-0.016121, abs=1e-6)
    t6a = next(c for c in TABLE6_ABLATION.claims if c.key == "T6a")
    assert t6a.relative == pytest.approx(75.54 / 84.98 - 1)
