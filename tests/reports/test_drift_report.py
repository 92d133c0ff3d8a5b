"""``drift.md``: layer numbers and M are printed as the integers they are, and M as the
layers the model has where it asked for more."""

from __future__ import annotations

from longred_bench.reports.drift_report import drift_markdown


def test_layers_and_m_are_integers() -> None:
    common = {"original": "m", "extension": "pi:factor=4", "texts": "brown", "seq_len": 64,
              "num_texts": 2, "num_tokens": 128}  # fmt: skip
    records = [
        {"kind": "drift_layer", **common, "layer": layer, "hidden_cosine": 0.9,
         "attention_kl": 0.01}
        for layer in (1, 2, 3)
    ] + [
        {"kind": "drift_summary", **common, "mean_hidden_cosine": 0.9, "last_hidden_cosine": 0.9,
         "mean_attention_kl": 0.01, "top_m": 6, "selected_layers": [1, 2, 3]}
    ]  # fmt: skip
    records[0]["provenance"] = {"device": "cpu", "git_commit": "abc"}
    md = drift_markdown(records, "t")
    assert "| 1, 2, 3 (M=3, 6 asked) |" in md  # a 3-layer model: all 3 selected, not 6
    assert "| 1 | 0.9000 / 1.00e-02 |" in md and "1.0 |" not in md and "M=6.0" not in md
    records[-1]["top_m"] = 2.0  # JSON floats come back as integers
    assert "| 1, 2, 3 (M=2) |" in drift_markdown(records, "t")


def test_cosines_near_one_keep_the_digits_that_tell_them_apart() -> None:
    """drift.md printed 1.0000 for extensions of cosine 0.999993, 0.999992 and 0.999991 (the
    plot and Table 1's verdict told them apart); exactly 1 still reads 1.0000."""
    from longred_bench.reports.drift_report import cosines

    assert cosines([0.999993, 0.999992, 0.999991]) == ["0.999993", "0.999992", "0.999991"]
    assert cosines([0.99216, 0.97414]) == ["0.9922", "0.9741"]  # 4 decimals where they tell
    assert cosines([1.0, 0.99998]) == ["1.00000", "0.99998"]


def test_the_per_layer_table_keeps_the_digits_the_summary_keeps() -> None:
    """The per-layer table printed every cosine at 4 decimals: 1.0000 for both extensions of a
    layer whose cosines are 0.999997 and 0.999994, under a summary that told them apart."""
    records = []
    for ext, cos in (("pi:factor=2", 0.999997), ("pi:factor=4", 0.999994)):
        common = {"original": "m", "extension": ext, "texts": "brown", "seq_len": 64,
                  "num_texts": 2, "num_tokens": 128}  # fmt: skip
        records += [
            {"kind": "drift_layer", **common, "layer": 1, "hidden_cosine": cos,
             "attention_kl": 2.88e-4},
            {"kind": "drift_layer", **common, "layer": 2, "hidden_cosine": cos - 0.5,
             "attention_kl": 3.85e-4},
            {"kind": "drift_summary", **common, "mean_hidden_cosine": cos,
             "last_hidden_cosine": cos, "mean_attention_kl": 3e-4, "top_m": 1,
             "selected_layers": [1, 2]},
        ]  # fmt: skip
    records[0]["provenance"] = {"device": "cpu", "git_commit": "abc"}
    md = drift_markdown(records, "t")
    assert "| 1 | 0.999997 / 2.88e-04 | 0.999994 / 2.88e-04 |" in md
    assert "| 2 | 0.4999 / 3.85e-04 | 0.4999 / 3.85e-04 |" not in md  # they differ: told apart
    assert "| 2 | 0.50000 / 3.85e-04 | 0.49999 / 3.85e-04 |" in md


def test_one_window_reads_in_the_singular() -> None:
    """A drift of one window read ``1 windows of 64 tokens`` in drift.md (and in Table 1's and
    ``compare``'s text lines, which count through the same helper)."""
    from longred_bench.wording import counted

    common = {"original": "m", "extension": "pi:factor=2", "texts": "brown", "seq_len": 64,
              "num_texts": 1, "num_tokens": 64}  # fmt: skip
    records = [
        {"kind": "drift_layer", **common, "layer": 1, "hidden_cosine": 0.9, "attention_kl": 0.01},
        {"kind": "drift_summary", **common, "mean_hidden_cosine": 0.9, "last_hidden_cosine": 0.9,
         "mean_attention_kl": 0.01, "top_m": 1, "selected_layers": [1]},
    ]  # fmt: skip
    records[0]["provenance"] = {"device": "cpu", "git_commit": "abc"}
    assert "`brown`: 1 window of 64 tokens." in drift_markdown(records, "t")
    records = [{**r, "num_texts": 3} for r in records]
    assert "`brown`: 3 windows of 64 tokens." in drift_markdown(records, "t")
    assert [counted(n, w) for n, w in ((1, "unit"), (0, "unit"), (2, "process"))] == [
        "1 unit", "0 units", "2 processes"]  # fmt: skip
