"""``kernels.linear_ce``'s options against hand-computed losses: a custom ``ignore_index``
reaches every implementation, and the reference's softmax and loss are fp32 for bf16 inputs."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from longred_bench.kernels.linear_ce import (
    linear_cross_entropy,
    linear_cross_entropy_reference,
)


def _inputs(dtype: torch.dtype = torch.float64):
    gen = torch.Generator().manual_seed(0)
    hidden = torch.randn(9, 8, generator=gen, dtype=torch.float64).to(dtype)
    weight = torch.randn(13, 8, generator=gen, dtype=torch.float64).to(dtype)
    return hidden, weight, torch.tensor([5, 1, 5, 12, 0, 5, 7, 3, 5])


def test_a_custom_ignore_index_reaches_every_implementation() -> None:
    # the mean of -log softmax at the target over the 5 rows whose target is not 5
    hidden, weight, target = _inputs()
    logp = torch.log_softmax(hidden @ weight.t(), dim=-1)
    expected = torch.stack([-logp[i, target[i]] for i in range(9) if target[i] != 5]).mean()
    for impl in ("plain", "chunked", "auto"):
        got = linear_cross_entropy(hidden, weight, target, ignore_index=5, impl=impl, chunk_rows=4)
        torch.testing.assert_close(got, expected, rtol=1e-12, atol=0)


def test_the_reference_computes_in_fp32_for_bf16_inputs() -> None:
    hidden, weight, target = _inputs(torch.bfloat16)
    got = linear_cross_entropy_reference(hidden, weight, target)
    assert got.dtype == torch.float32
    expected = F.cross_entropy((hidden @ weight.t()).float(), target)
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=0)
