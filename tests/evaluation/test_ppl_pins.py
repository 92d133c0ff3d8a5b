"""Position perplexity (``evaluation.ppl``) against a plain-PyTorch reference: which tokens are
scored, how their NLLs are bucketed and averaged, and the chunked output projection."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from longred_bench.data.texts import token_windows
from longred_bench.evaluation import ppl
from longred_bench.evaluation.ppl import run_position_ppl
from longred_bench.models.loading import load


def _reference_buckets(
    windows: torch.Tensor, model, length: int, bucket: int
) -> list[tuple[float, int]]:
    """Mean NLL and count per position bucket, from each window's full logits in fp64."""
    sums = [0.0] * math.ceil(length / bucket)
    counts = [0] * len(sums)
    with torch.no_grad():
        for row in windows:
            logits = model(input_ids=row[None]).logits[0].double()
            logp = F.log_softmax(logits, dim=-1)
            for pos in range(1, length):  # position 0 is never predicted
                k = pos // bucket
                sums[k] += -float(logp[pos - 1, row[pos]])
                counts[k] += 1
    return [(s / c, c) for s, c in zip(sums, counts, strict=True)]


@pytest.mark.parametrize("batch_size", [1, 2])
def test_bucket_means_match_a_per_token_reference(batch_size: int) -> None:
    """Every window's next-token NLLs at positions 1..length-1 are averaged per bucket of
    ``bucket`` positions (the last bucket shorter when ``bucket`` does not divide the length),
    pooled over all windows and batches; ``ppl`` is ``exp(nll)``."""
    length, bucket, num = 40, 16, 3
    records = run_position_ppl(
        "tiny-random", corpus="random", length=length, num_windows=num, bucket=bucket,
        batch_size=batch_size, progress=False,
    )  # fmt: skip
    loaded = load("tiny-random")
    windows = token_windows(loaded.tokenizer, "random", num, length)
    assert windows.shape == (num, length)
    want = _reference_buckets(windows, loaded.model.eval(), length, bucket)
    assert [(r["bucket_start"], r["bucket_end"]) for r in records] == [(0, 16), (16, 32), (32, 40)]
    assert [r["n_tokens"] for r in records] == [c for _, c in want] == [45, 48, 24]
    assert sum(r["n_tokens"] for r in records) == num * (length - 1)
    for record, (nll, _) in zip(records, want, strict=True):
        assert record["nll"] == pytest.approx(nll, rel=1e-5)
        assert record["ppl"] == pytest.approx(math.exp(record["nll"]), rel=1e-12)
        assert record["num_windows"] == num and record["length"] == length
        assert record["corpus"] == "random" and record["kind"] == "ppl"
        assert record["rope"] is None and record["model"] == "tiny-random"


def test_records_name_the_evaluated_window_and_its_rope() -> None:
    """A RoPE-extended run records the extended window and RoPE parameters of the model it
    measured, and scores differ from the original model's."""
    args = dict(corpus="random", length=24, num_windows=1, bucket=8, progress=False)
    base = run_position_ppl("tiny-random", **args)
    ext = run_position_ppl("tiny-random", rope="pi:factor=4", **args)
    loaded = load("tiny-random", rope="pi:factor=4")
    window = loaded.model.config.max_position_embeddings
    assert window == 4 * load("tiny-random").model.config.max_position_embeddings
    assert {r["max_position_embeddings"] for r in ext} == {window}
    assert {r["rope"] for r in ext} == {"pi:factor=4"}
    assert all(r["rope_parameters"] == dict(loaded.model.config.rope_parameters) for r in ext)
    assert [r["nll"] for r in base] != [r["nll"] for r in ext]


def test_a_bucket_larger_than_the_window_is_one_bucket() -> None:
    """With a bucket of at least the window length, all ``length - 1`` predictions are one
    bucket ``[0, length)``."""
    records = run_position_ppl(
        "tiny-random", corpus="random", length=12, num_windows=2, bucket=50, progress=False
    )
    assert [(r["bucket_start"], r["bucket_end"], r["n_tokens"]) for r in records] == [(0, 12, 22)]


def test_a_run_longer_than_the_chunk_scores_each_position_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past :data:`LOGIT_CHUNK` positions the projection runs a chunk at a time; the records
    are those of whole logits (no position dropped or scored twice)."""
    args = dict(corpus="random", length=40, num_windows=2, bucket=13, progress=False)
    whole = run_position_ppl("tiny-random", **args)
    monkeypatch.setattr(ppl, "LOGIT_CHUNK", 7)
    chunked = run_position_ppl("tiny-random", **args)
    assert [r["n_tokens"] for r in chunked] == [r["n_tokens"] for r in whole] == [24, 26, 26, 2]
    for a, b in zip(chunked, whole, strict=True):
        assert a["nll"] == pytest.approx(b["nll"], rel=1e-5)


@pytest.mark.parametrize("seq", [9, 10, 11, 17])
def test_chunked_window_nll_equals_whole_logits_at_every_position(seq: int) -> None:
    """:func:`window_nll` with the projection forced on: position 0 invalid with NLL 0, every
    other position the whole-logits NLL of its token, for lengths around the chunk size."""
    model = load("tiny-random").model.eval()
    ids = torch.randint(
        0, model.config.vocab_size, (2, seq), generator=torch.Generator().manual_seed(seq)
    )
    with torch.inference_mode():
        logp = F.log_softmax(model(input_ids=ids).logits.double(), dim=-1)
        want = torch.zeros(2, seq, dtype=torch.float64)
        want[:, 1:] = -logp[:, :-1].gather(-1, ids[:, 1:, None])[..., 0]
        old = ppl.LOGIT_CHUNK
        try:
            ppl.LOGIT_CHUNK = 4
            nll, valid = ppl.window_nll(model, ids, projection=True)
        finally:
            ppl.LOGIT_CHUNK = old
    assert nll.dtype == torch.float32 and valid.dtype == torch.bool
    assert valid[:, 0].logical_not().all() and valid[:, 1:].all()
    assert torch.allclose(nll.double(), want, atol=1e-5)


class _NoDecoder(torch.nn.Module):
    """A causal LM that exposes its output head but not its decoder."""

    def __init__(self, model) -> None:
        super().__init__()
        self.inner = model

    def get_output_embeddings(self):
        return self.inner.get_output_embeddings()

    def forward(self, **kwargs):
        return self.inner(**kwargs)


def test_a_model_without_a_decoder_gets_its_whole_logits(monkeypatch: pytest.MonkeyPatch) -> None:
    """A model whose decoder cannot be reached is not taken for a projection: its long
    windows are scored from its whole logits, with the same NLLs."""
    model = _NoDecoder(load("tiny-random").model.eval())
    ids = torch.randint(0, 200, (1, 12), generator=torch.Generator().manual_seed(1))
    monkeypatch.setattr(ppl, "LOGIT_CHUNK", 4)
    with torch.inference_mode():
        assert ppl.head_is_projection(model, ids) is False
        nll, valid = ppl.window_nll(model, ids)
        logp = F.log_softmax(model(input_ids=ids).logits.double(), dim=-1)
    want = -logp[0, :-1].gather(-1, ids[0, 1:, None])[..., 0]
    assert torch.allclose(nll[0, 1:].double(), want, atol=1e-5) and not valid[0, 0]


@pytest.mark.parametrize(("length", "bucket"), [(2, 1), (2, 2), (5, 1)])
def test_the_smallest_windows_and_buckets_are_measured(length: int, bucket: int) -> None:
    """Windows of 2 tokens and buckets of 1 token are valid: each position from 1 on is one
    prediction, and a bucket holding only position 0 has no tokens."""
    records = run_position_ppl(
        "tiny-random", corpus="random", length=length, num_windows=2, bucket=bucket,
        progress=False,
    )  # fmt: skip
    counts = [r["n_tokens"] for r in records]
    assert len(records) == math.ceil(length / bucket)
    assert sum(counts) == 2 * (length - 1)
    if bucket == 1:
        assert counts == [0] + [2] * (length - 1)
        assert all(math.isfinite(r["nll"]) for r in records[1:])


def test_the_defaults_are_8_windows_of_4096_tokens_in_1024_token_buckets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Called with no window settings, the runner asks for 8 windows of 4,096 tokens of
    ``austen`` and buckets positions by 1,024 tokens (one window stands in for the text)."""
    asked = []

    def windows(tokenizer, source, num, length, **_):
        asked.append((source, num, length))
        return torch.randint(0, 200, (1, length), generator=torch.Generator().manual_seed(0))

    monkeypatch.setattr(ppl, "token_windows", windows)
    records = run_position_ppl("tiny-random", progress=False)
    assert asked == [("austen:all", 8, 4096)]
    assert [(r["bucket_start"], r["bucket_end"]) for r in records] == [
        (0, 1024), (1024, 2048), (2048, 3072), (3072, 4096)
    ]  # fmt: skip
    assert [r["n_tokens"] for r in records] == [1023, 1024, 1024, 1024]
    assert {(r["length"], r["num_windows"], r["dtype"]) for r in records} == {(4096, 8, "float32")}


def test_bucket_sums_accumulate_in_double_precision(monkeypatch: pytest.MonkeyPatch) -> None:
    """The NLL sums of successive batches are added in float64: a small NLL added to a large
    one is not rounded away before the mean is taken."""
    given = iter([1.0, 2.0**-30])

    def one_bucket(nll, valid, bucket):
        return torch.tensor([next(given)], dtype=torch.float64), torch.tensor([1])

    monkeypatch.setattr(ppl, "bucket_nll", one_bucket)
    (record,) = run_position_ppl(
        "tiny-random", corpus="random", length=8, num_windows=2, bucket=8, progress=False
    )
    assert record["n_tokens"] == 2
    assert record["nll"] == (1.0 + 2.0**-30) / 2
