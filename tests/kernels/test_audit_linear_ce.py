"""Chunked linear cross-entropy at a vocabulary wider than one chunk's byte budget, and at
logits large enough that an unshifted exponential overflows."""

import pytest
import torch
import torch.nn.functional as F

import longred_bench.kernels.linear_ce as linear_ce
from longred_bench.kernels.linear_ce import default_chunk_rows, linear_cross_entropy_chunked


def test_a_vocabulary_wider_than_the_budget_still_gets_one_row_per_chunk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert default_chunk_rows(10, linear_ce.CHUNK_BYTES) == 1
    monkeypatch.setattr(linear_ce, "CHUNK_BYTES", 16)  # under one row of 11 fp32 logits
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(6, 4, dtype=torch.float64, generator=g)
    weight = torch.randn(11, 4, dtype=torch.float64, generator=g)
    target = torch.randint(0, 11, (6,), generator=g)
    got = linear_cross_entropy_chunked(hidden, weight, target)
    torch.testing.assert_close(got, F.cross_entropy(hidden @ weight.t(), target))


def test_large_logits_give_a_finite_loss_and_gradient() -> None:
    """Logits near 1000 (exp overflows in fp64 past 709): the loss is the log-softmax's."""
    hidden = torch.tensor([[1.0], [2.0]], dtype=torch.float64, requires_grad=True)
    weight = torch.tensor([[1000.0], [999.0], [990.0]], dtype=torch.float64)
    target = torch.tensor([1, 0])
    loss = linear_cross_entropy_chunked(hidden, weight, target, chunk_rows=1)
    want = F.cross_entropy(hidden.detach() @ weight.t(), target)
    torch.testing.assert_close(loss.detach(), want)
    loss.backward()
    assert torch.isfinite(hidden.grad).all()


def test_under_autocast_the_logits_are_made_in_its_dtype() -> None:
    """fp32 inputs under bf16 autocast: the loss is that of the bf16 logits (as the plain form
    gets them), not of fp32 logits."""
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(16, 32, generator=g) * 4
    weight = torch.randn(50, 32, generator=g)
    target = torch.randint(0, 50, (16,), generator=g)
    bf16_logits = (hidden.bfloat16() @ weight.bfloat16().t()).float()
    want = F.cross_entropy(bf16_logits, target)
    fp32 = F.cross_entropy(hidden @ weight.t(), target)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = linear_cross_entropy_chunked(hidden, weight, target, chunk_rows=5)
    assert got.dtype == torch.float32
    assert abs(float(got - want)) < abs(float(want - fp32)) / 10
