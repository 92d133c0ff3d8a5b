"""``drift.md``'s summary cells: the attention KL in scientific notation (a fixed number of
decimals reads 0.000 for a small KL), M written alone where the model has exactly the layers
asked for, and cosines that no 8 decimals tell apart still printed at 8 (not 1.0000)."""

from __future__ import annotations

from typing import Any

from longred_bench.reports.drift_report import cosines, drift_markdown


def _records(top_m: int, kl: float) -> list[dict[str, Any]]:
    common = {"original": "m", "extension": "pi:factor=4", "texts": "brown", "seq_len": 64,
              "num_texts": 2, "num_tokens": 128}  # fmt: skip
    records: list[dict[str, Any]] = [
        {"kind": "drift_layer", **common, "layer": layer, "hidden_cosine": 0.9,
         "attention_kl": kl}
        for layer in (1, 2)
    ] + [
        {"kind": "drift_summary", **common, "mean_hidden_cosine": 0.9, "last_hidden_cosine": 0.8,
         "mean_attention_kl": kl, "top_m": top_m, "selected_layers": [1, 2]}
    ]  # fmt: skip
    records[0]["provenance"] = {"device": "cpu", "git_commit": "abc"}
    return records


def test_the_summary_row_reads_m_and_the_kl_as_measured() -> None:
    md = drift_markdown(_records(2, 2.566e-4), "t")
    # a 2-layer model asked for M = 2: nothing to explain
    assert "| pi:factor=4 | 0.9000 | 0.8000 | 2.566e-04 | 1, 2 (M=2) |" in md


def test_cosines_below_one_never_read_one() -> None:
    """Two cosines 1e-9 apart: no number of decimals up to 8 tells them apart, so they take 8
    (both read 0.99999999), not the least (both would read 1.0000, a cosine of exactly 1)."""
    assert cosines([0.999999991, 0.999999992]) == ["0.99999999", "0.99999999"]
