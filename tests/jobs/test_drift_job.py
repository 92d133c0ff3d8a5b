"""The drift job's records: per-text values in each summary, in window order, consistent with
the summary means."""

from dataclasses import replace

import pytest

from longred_bench.jobs.configs import DriftConfig
from longred_bench.jobs.drift import run_drift
from longred_bench.reports.drift_report import drift_markdown

pytestmark = pytest.mark.integration


def test_summaries_carry_per_text_values_whose_mean_is_the_summary_mean():
    cfg = DriftConfig(
        original="tiny-random",
        rope=("abf:theta=1e6", "pi:factor=4"),
        texts="random",
        num_texts=3,
        seq_len=32,
        batch_size=2,  # batches of 2 and 1: per-text values follow the window order
        top_m=1,
    )
    records, _ = run_drift(cfg, progress=False)
    summaries = [r for r in records if r["kind"] == "drift_summary"]
    assert [r["extension"] for r in summaries] == ["abf:theta=1e6", "pi:factor=4"]
    for s in summaries:
        assert s["num_texts"] == len(s["text_hidden_cosine"]) == len(s["text_attention_kl"]) == 3
        assert s["text_num_tokens"] == [32, 32, 32]
        assert sum(s["text_hidden_cosine"]) / 3 == pytest.approx(s["mean_hidden_cosine"], rel=1e-12)
        assert sum(s["text_attention_kl"]) / 3 == pytest.approx(s["mean_attention_kl"], rel=1e-9)
        assert all(0 < v < 1 for v in s["text_hidden_cosine"])
        assert all(v > 0 for v in s["text_attention_kl"])
        layers = [
            r for r in records if r["kind"] == "drift_layer" and r["extension"] == s["extension"]
        ]
        assert len(layers) == 4 and set(layers[0]) >= {"layer", "hidden_cosine", "attention_kl"}
        last = max(layers, key=lambda r: r["layer"])  # the last layer's, not the mean over them
        assert s["last_hidden_cosine"] == pytest.approx(last["hidden_cosine"], rel=1e-12)
    # PI x4 moves every text more than ABF 1e6 does.
    abf, pi = summaries
    assert all(
        p > a for a, p in zip(abf["text_attention_kl"], pi["text_attention_kl"], strict=True)
    )
    # Window order: the first two windows, measured alone and one at a time, give the first two
    # values of each list (the reports pair texts across runs by this order).
    records2, _ = run_drift(replace(cfg, num_texts=2, batch_size=1), progress=False)
    for s, s2 in zip(summaries, [r for r in records2 if r["kind"] == "drift_summary"], strict=True):
        for key in ("text_hidden_cosine", "text_attention_kl"):
            assert s2[key] == pytest.approx(s[key][:2], rel=1e-6), key
            assert s[key][0] != pytest.approx(s[key][-1], rel=1e-6)  # an order to tell apart
    md = drift_markdown(
        [{**r, "provenance": {"device": "cpu", "git_commit": "x"}} for r in records], "t"
    )
    assert "| pi:factor=4 |" in md


def test_extended_checkpoints_as_they_are_and_rope_on_the_original(tmp_path):
    """--extended and --rope together: each checkpoint as it is and each spec applied to the
    original (as the docs, compare and the cost model say); the spec was applied to each
    checkpoint instead, and neither the checkpoint nor the extended original was measured."""
    from longred_bench.models.loading import extend, load

    loaded = load("tiny-random")
    extend(loaded.model, "pi:factor=4").save_pretrained(tmp_path)
    loaded.tokenizer.save_pretrained(tmp_path)
    both = DriftConfig(original="tiny-random", extended=(str(tmp_path),), rope=("pi:factor=4",),
                       texts="random", num_texts=2, seq_len=32, top_m=1)  # fmt: skip
    records, _ = run_drift(both, progress=False)
    summaries = {r["extension"]: r for r in records if r["kind"] == "drift_summary"}
    assert list(summaries) == [str(tmp_path), "pi:factor=4"]
    # the saved checkpoint is the original at pi x4: the same drift as the zero-shot extension
    ckpt, zero_shot = summaries.values()
    assert ckpt["mean_attention_kl"] == pytest.approx(zero_shot["mean_attention_kl"], rel=1e-9)
    assert ckpt["mean_attention_kl"] > 0


def test_a_text_with_no_valid_token_is_written_as_null() -> None:
    """JSON has no NaN: a window with no valid token is ``null`` in the per-text lists."""
    from longred_bench.jobs.drift import _finite

    assert _finite([float("nan"), 0.5]) == [None, 0.5]
