"""Table 1 cells a reader checks against the paper: the RoPE column spells each extension's base
and factor as written (a fractional factor kept), the texts line gives the window count, window
length and token total, the after-CPT attention KL keeps four significant digits, the paper's
rows read as published, the model line names the CPT checkpoints where they were
compared, and the control summary is the lowest seed's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from report_helpers import PROV

from longred_bench.reports.table1 import build_table1, control_summary

ROPE = {
    "abf:theta=4e4": {"rope_type": "default", "rope_theta": 4e4},
    "yarn:factor=2.5": {"rope_type": "yarn", "rope_theta": 1e4, "factor": 2.5},
}


def _drift(hidden: float, kl: float, extension: str | None, **extra: Any) -> list[dict[str, Any]]:
    """One model's two layer records and its summary, four texts at the same values."""
    common: dict[str, Any] = {
        "original": "tiny-base", "extension": extension, "texts": "brown", "seq_len": 256,
        "num_texts": 4, "num_tokens": 1024, **extra,
    }  # fmt: skip
    layers = [{"kind": "drift_layer", **common, "layer": i, "hidden_cosine": hidden,
               "attention_kl": kl} for i in (1, 2)]  # fmt: skip
    rope = ROPE.get(extension, {"rope_type": "default", "rope_theta": 1e4})
    summary = {
        "kind": "drift_summary", **common, "rope_parameters": rope,
        "max_position_embeddings": 1024, "mean_hidden_cosine": hidden,
        "last_hidden_cosine": hidden, "mean_attention_kl": kl, "top_m": 1,
        "selected_layers": [2], "text_hidden_cosine": [hidden] * 4,
        "text_attention_kl": [kl] * 4, "text_num_tokens": [256] * 4,
    }  # fmt: skip
    return [{**r, "provenance": PROV} for r in (*layers, summary)]


def _row(md: str, extension: str) -> list[str]:
    start = f"| this suite | tiny-base | `{extension}`"
    line = next(x for x in md.splitlines() if x.startswith(start))
    return [c.strip() for c in line.strip("|").split("|")]


def test_the_rope_column_spells_base_and_factor_as_written(tmp_path: Path) -> None:
    """``base 4e+04`` for an ABF extension; ``yarn x2.5, base 1e+04`` for a scaled one: the
    factor keeps its fraction and the base its one significant digit."""
    records = [*_drift(0.9, 0.2, "abf:theta=4e4"), *_drift(0.8, 0.3, "yarn:factor=2.5")]
    md = build_table1(records, tmp_path, profile="tiny", command="c")[0].read_text()
    assert _row(md, "abf:theta=4e4")[3] == "base 4e+04"
    assert _row(md, "yarn:factor=2.5")[3] == "yarn x2.5, base 1e+04"


def test_the_texts_line_gives_windows_length_and_tokens(tmp_path: Path) -> None:
    md = build_table1(_drift(0.9, 0.2, "abf:theta=4e4"), tmp_path, profile="tiny", command="c")
    text = md[0].read_text()
    assert "- Texts: `brown`, 4 windows of 256 tokens (1024 tokens)." in text


def test_the_after_cpt_kl_keeps_four_significant_digits(tmp_path: Path) -> None:
    records = [
        *_drift(0.9, 0.2, "abf:theta=4e4"),
        *_drift(0.95, 0.04321, "abf:theta=4e4", stage="after", trained_row="cpt", seed=0),
    ]
    md = build_table1(records, tmp_path, profile="tiny", command="c")[0].read_text()
    cells = _row(md, "abf:theta=4e4")
    assert cells[6].startswith("0.2 [") and cells[7].startswith("0.04321 [")


def test_the_paper_rows_are_as_published(tmp_path: Path) -> None:
    """Hidden similarity before then after CPT, KL in the paper's 1e-5 scale, two decimals."""
    md = build_table1(_drift(0.9, 0.2, "abf:theta=4e4"), tmp_path, profile="tiny", command="c")
    lines = md[0].read_text().splitlines()
    assert (
        "| paper [sec] | Llama-3-8B-128K | ABF | base 1.0e+08 | 0.83 | 0.94 | 6.74e-5 | 1.68e-5 | |"
        in lines
    )
    last = "| Llama-3-8B-Instruct-262K | ABF | base 2.8e+08 | 0.76 | 0.91 | 8.75e-5 | 2.50e-5 | |"
    assert f"| paper [sec] {last}" in lines


def test_the_model_line_says_whether_cpt_checkpoints_are_compared(tmp_path: Path) -> None:
    before = _drift(0.9, 0.2, "abf:theta=4e4")
    after = _drift(0.95, 0.1, "abf:theta=4e4", stage="after", trained_row="cpt", seed=0)
    zero_shot = build_table1(before, tmp_path / "a", profile="tiny", command="c")[0].read_text()
    both = build_table1(before + after, tmp_path / "b", profile="tiny", command="c")[0].read_text()
    assert "original vs RoPE extensions (zero-shot)." in zero_shot
    assert "original vs RoPE extensions and their CPT checkpoints." in both


def test_control_summary_is_the_lowest_seeds() -> None:
    rows = [
        {"stage": "before", "seed": None, "mean_hidden_cosine": 0.9},
        {"stage": "control", "seed": 2, "mean_hidden_cosine": 0.93},
        {"stage": "control", "seed": 0, "mean_hidden_cosine": 0.97},
        {"stage": "control", "seed": 1, "mean_hidden_cosine": 0.95},
    ]
    chosen = control_summary(pd.DataFrame(rows))
    assert chosen is not None and chosen["seed"] == 0 and chosen["mean_hidden_cosine"] == 0.97
    assert control_summary(pd.DataFrame(rows[:1])) is None
