"""Long-document perplexity by position bucket: the tensor metrics, the runner and the plot."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from data_helpers import ensure_cached

from longred_bench.errors import UserError
from longred_bench.evaluation.ppl import resolve_source, run_position_ppl
from longred_bench.metrics.position_ppl import (
    bucket_bounds,
    bucket_nll,
    mean_nll,
    next_token_nll,
    perplexity,
    token_nll,
)
from longred_bench.reports.ppl_plot import plot_position_ppl

PNG = b"\x89PNG\r\n\x1a\n"


def test_shapes_that_do_not_match_name_the_tensors():
    """A wrong mask was a raw broadcast error; 1-D NLLs 'not enough values to unpack'."""
    logits, ids = torch.randn(2, 5, 7), torch.randint(0, 7, (2, 5))
    with pytest.raises(ValueError, match=r"attention_mask \(5,\) does not match input_ids"):
        next_token_nll(logits, ids, torch.ones(5))
    with pytest.raises(ValueError, match=r"do not match input_ids \(2, 4\)"):
        next_token_nll(logits, ids[:, :4])
    with pytest.raises(ValueError, match=r"nll must be \[batch, seq\], got shape \(5,\)"):
        bucket_nll(torch.zeros(5), None, 2)


def test_bucket_nll_by_hand():
    nll = torch.tensor(
        [[0.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0]]
    )
    mask = torch.tensor(
        [
            [False, True, True, True, True, True, True],
            [False, False, True, True, True, True, False],  # position 1 and 6 not counted
        ]
    )
    sums, counts = bucket_nll(nll, mask, 3)  # buckets [0, 3), [3, 6), [6, 7): the last is ragged
    assert sums.dtype == torch.float64 and counts.dtype == torch.int64
    assert sums.tolist() == [2 + 3 + 30, 4 + 5 + 6 + 40 + 50 + 60, 7]
    assert counts.tolist() == [3, 6, 1]
    assert bucket_bounds(7, 3) == [(0, 3), (3, 6), (6, 7)]
    assert mean_nll(sums, counts).tolist() == [35 / 3, 165 / 6, 7.0]
    expected = torch.exp(torch.tensor([35 / 3, 27.5, 7.0], dtype=torch.float64))
    assert torch.allclose(perplexity(sums, counts), expected)


def test_bucket_nll_without_mask_and_edge_cases():
    nll = torch.arange(8, dtype=torch.float32).view(1, 8)
    sums, counts = bucket_nll(nll, None, 4)
    assert sums.tolist() == [0 + 1 + 2 + 3, 4 + 5 + 6 + 7] and counts.tolist() == [4, 4]
    sums, counts = bucket_nll(nll, None, 100)  # one bucket shorter than its size
    assert sums.tolist() == [28.0] and counts.tolist() == [8]
    assert bucket_bounds(8, 100) == [(0, 8)]
    sums, counts = bucket_nll(nll, torch.zeros(1, 8, dtype=torch.bool), 4)  # nothing counted
    assert sums.tolist() == [0.0, 0.0] and counts.tolist() == [0, 0]
    assert torch.isnan(mean_nll(sums, counts)).all() and torch.isnan(perplexity(sums, counts)).all()
    sums, counts = bucket_nll(torch.zeros(2, 0), None, 4)
    assert sums.shape == (0,) and counts.shape == (0,)
    with pytest.raises(ValueError):
        bucket_nll(nll, None, 0)
    with pytest.raises(ValueError):
        bucket_nll(nll, torch.ones(1, 7, dtype=torch.bool), 4)


def test_token_nll_matches_log_softmax_in_fp64():
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 1030, 11, generator=gen) * 3  # more positions than one fp32 block
    labels = torch.randint(0, 11, (2, 1030), generator=gen)
    labels[1, 5] = -100
    expected = -torch.log_softmax(logits.double(), -1).gather(-1, labels.clamp_min(0)[..., None])
    expected = expected[..., 0]
    expected[1, 5] = 0.0
    got = token_nll(logits, labels)
    assert got.dtype == torch.float32 and got.shape == (2, 1030)
    assert torch.allclose(got.double(), expected, atol=1e-5)
    got_bf16 = token_nll(logits.bfloat16(), labels)  # upcast inside
    assert got_bf16.dtype == torch.float32
    ref_bf16 = F.cross_entropy(logits.bfloat16().float().transpose(1, 2), labels, reduction="none")
    assert torch.allclose(got_bf16, ref_bf16, atol=1e-5)


def test_next_token_nll_alignment_and_padding():
    vocab = 5
    ids = torch.tensor([[1, 2, 3, 4], [0, 0, 2, 3]])
    # logits[:, p] put all mass on ids[:, p + 1] (one-hot scaled), so the NLL is known
    logits = torch.full((2, 4, vocab), -1e4)
    for b in range(2):
        for p in range(3):
            logits[b, p, ids[b, p + 1]] = 0.0
    logits[0, 1] = 0.0  # uniform for the prediction of position 2 in row 0
    attention = torch.tensor([[1, 1, 1, 1], [0, 0, 1, 1]])  # row 1 left-padded
    nll, valid = next_token_nll(logits, ids, attention)
    assert valid.tolist() == [[False, True, True, True], [False, False, False, True]]
    assert nll[0].tolist() == pytest.approx([0.0, 0.0, math.log(vocab), 0.0], abs=1e-4)
    assert nll[1].tolist() == pytest.approx([0.0, 0.0, 0.0, 0.0], abs=1e-4)
    nll, valid = next_token_nll(logits[:, :1], ids[:, :1])
    assert not valid.any() and nll.shape == (2, 1)


def test_next_token_nll_agrees_with_the_models_loss():
    from longred_bench.models.loading import load

    model = load("tiny-random").model
    ids = torch.randint(0, 256, (2, 40), generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        out = model(input_ids=ids, labels=ids)
    nll, valid = next_token_nll(out.logits, ids)
    sums, counts = bucket_nll(nll, valid, 16)
    assert counts.tolist() == [2 * 15, 2 * 16, 2 * 8]
    assert float(sums.sum() / counts.sum()) == pytest.approx(float(out.loss), rel=1e-5)


def test_resolve_source():
    assert resolve_source("austen") == "austen:all"
    assert resolve_source("kjv") == "kjv:all"
    assert resolve_source("austen:test") == "austen:test"
    assert resolve_source("random") == "random"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"length": 1}, "length must be at least 2"),
        ({"bucket": 0}, "bucket size"),
        ({"num_windows": 0}, "num_windows and batch_size"),
    ],
)
def test_bad_arguments_are_clear_errors(kwargs, message):
    with pytest.raises(UserError, match=message):
        run_position_ppl("tiny-random", progress=False, **kwargs)


@pytest.mark.integration
def test_runner_on_tiny_model(request, tmp_path):
    ensure_cached(request, "austen")
    args = {"corpus": "austen:test", "length": 512, "num_windows": 3, "bucket": 200}
    base = run_position_ppl("tiny-random", batch_size=2, progress=False, **args)
    bounds = [(r["bucket_start"], r["bucket_end"]) for r in base]
    assert bounds == [(0, 200), (200, 400), (400, 512)]
    assert [r["n_tokens"] for r in base] == [3 * 199, 3 * 200, 3 * 112]
    assert sum(r["n_tokens"] for r in base) == 3 * (512 - 1)
    for r in base:
        assert r["kind"] == "ppl" and r["model"] == "tiny-random" and r["rope"] is None
        assert r["corpus"] == "austen:test" and r["length"] == 512 and r["num_windows"] == 3
        assert r["max_position_embeddings"] == 256  # the window is exceeded on purpose
        assert math.isfinite(r["nll"]) and r["ppl"] == pytest.approx(math.exp(r["nll"]))
    # batching does not change the numbers
    one = run_position_ppl("tiny-random", batch_size=1, progress=False, **args)
    assert [r["nll"] for r in one] == pytest.approx([r["nll"] for r in base], rel=1e-5)

    extended = run_position_ppl("tiny-random", rope="pi:factor=4", progress=False, **args)
    assert [r["n_tokens"] for r in extended] == [r["n_tokens"] for r in base]
    assert {(r["rope"], r["max_position_embeddings"]) for r in extended} == {("pi:factor=4", 1024)}
    # every record names the parameters that ran, as the lm-eval suites' records do
    assert {r["rope_parameters"]["rope_type"] for r in base} == {"default"}
    assert {(r["rope_parameters"]["rope_type"], r["rope_parameters"]["factor"])
            for r in extended} == {("linear", 4.0)}  # fmt: skip
    for a, b in zip(base, extended, strict=True):
        assert a["nll"] != b["nll"]

    png = plot_position_ppl(base + extended, tmp_path / "out" / "ppl.png", "tiny-random")
    assert png.read_bytes().startswith(PNG)


def test_a_long_windows_logits_are_held_a_chunk_at_a_time(monkeypatch):
    """A window's whole logits (``length x vocab``) were held at once: 20 GB at 100K tokens of
    SmolLM2's vocabulary, killed for memory. Computed a chunk of positions at a time, each NLL
    is the whole-logits one; a model whose head is more than a projection gets whole logits."""
    from longred_bench.evaluation import ppl
    from longred_bench.models.loading import load

    model = load("tiny-random").model.eval()
    ids = torch.randint(
        0, model.config.vocab_size, (2, 50), generator=torch.Generator().manual_seed(0)
    )
    with torch.inference_mode():
        whole = next_token_nll(model(input_ids=ids).logits, ids)
        shapes = []
        head = model.get_output_embeddings()
        head.register_forward_hook(lambda mod, args, out: shapes.append(tuple(out.shape)))
        monkeypatch.setattr(ppl, "LOGIT_CHUNK", 16)
        chunked = ppl.window_nll(model, ids)
        vocab = model.config.vocab_size
        # the two-token check (whole, then projected), then the window's chunks
        assert shapes == [(1, 2, vocab)] * 2 + [(2, 16, vocab)] * 3 + [(2, 1, vocab)]
        assert torch.allclose(chunked[0], whole[0], atol=1e-5) and torch.equal(chunked[1], whole[1])
        shapes.clear()
        # logits scaled after the projection (Falcon-H1's lm_head_multiplier): the model's own
        model.register_forward_hook(lambda mod, args, out: out.__class__(
            **{**out, "logits": out.logits * 0.25}))  # fmt: skip
        scaled = next_token_nll(model(input_ids=ids).logits, ids)
        shapes.clear()
        got = ppl.window_nll(model, ids)
        assert shapes == [(1, 2, vocab)] * 2 + [(2, 50, vocab)]
        assert torch.allclose(got[0], scaled[0]) and not torch.allclose(got[0], whole[0])


def test_plot_needs_records(tmp_path):
    with pytest.raises(ValueError, match="no perplexity records"):
        plot_position_ppl([], tmp_path / "ppl.png", "empty")
    records = [
        {"kind": "ppl", "model": "m", "rope": rope, "corpus": "austen:all", "length": 4096,
         "bucket_start": s, "bucket_end": s + 1024, "nll": 2.0 + k + s / 4096, "ppl": 0.0,
         "n_tokens": 10, "num_windows": 1, "max_position_embeddings": window}
        for k, (rope, window) in enumerate([(None, 2048), ("yarn:factor=4", 8192)])
        for s in range(0, 4096, 1024)
    ]  # fmt: skip
    for r in records:
        r["ppl"] = math.exp(r["nll"])
    path = plot_position_ppl(records, tmp_path / "ppl.png", "two runs")
    assert path.read_bytes().startswith(PNG)


def test_absolute_positions_cannot_run_past_their_window(tmp_path):
    from transformers import GPT2Config, GPT2LMHeadModel

    from longred_bench.models.zoo import byte_tokenizer

    config = GPT2Config(vocab_size=259, n_positions=64, n_embd=16, n_layer=1, n_head=2)
    GPT2LMHeadModel(config).save_pretrained(tmp_path)
    byte_tokenizer().save_pretrained(tmp_path)
    with pytest.raises(UserError, match="absolute positions"):
        run_position_ppl(str(tmp_path), corpus="random", length=128, num_windows=1, bucket=32)
    records = run_position_ppl(
        str(tmp_path), corpus="random", length=64, num_windows=1, bucket=32, progress=False
    )
    assert [r["n_tokens"] for r in records] == [31, 32]


def test_next_token_nll_is_0_where_a_prediction_does_not_count():
    """An invalid entry of ``nll`` (a padded token or one after padding) is 0 whatever the
    logits say there, not the NLL of the pad token."""
    ids = torch.tensor([[3, 1, 2, 4, 0, 0]])
    logits = torch.randn(1, 6, 5, generator=torch.Generator().manual_seed(0))
    attention = torch.tensor([[1, 1, 1, 1, 0, 0]])  # right-padded
    nll, valid = next_token_nll(logits, ids, attention)
    assert valid.tolist() == [[False, True, True, True, False, False]]
    assert nll[0, 4:].tolist() == [0.0, 0.0]
    unmasked, _ = next_token_nll(logits, ids)
    assert (unmasked[0, 4:] > 0).all()  # the pad tokens' NLL, had they counted
    assert torch.equal(nll[0, :4], unmasked[0, :4])


def test_token_nll_honours_its_ignore_index():
    """Labels equal to ``ignore_index`` (not only -100) give 0."""
    logits = torch.randn(1, 4, 6, generator=torch.Generator().manual_seed(0))
    labels = torch.tensor([[1, -1, 2, -1]])
    got = token_nll(logits, labels, ignore_index=-1)
    assert got[0, 1].item() == 0.0 and got[0, 3].item() == 0.0
    assert torch.equal(got[0, [0, 2]], token_nll(logits, labels.clamp_min(0))[0, [0, 2]])
