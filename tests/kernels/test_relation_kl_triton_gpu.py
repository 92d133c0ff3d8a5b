"""GPU tier of the Triton relation-KL tests (``gpu`` marker, skipped without CUDA): real sizes,
the default tiles, bf16 (fp16 and fp32 once each), up to 32K tokens against the chunked path in
fp64. Same accuracy rule as ``test_relation_kl_triton.py``."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("triton")

from triton_helpers import (
    DEVICE,
    F64,
    FLOOR,
    assert_within_twice_naive,
    compare_three_ways,
    make_inputs,
    make_mask,
    make_upstream,
    naive,
    rows_and_grads,
)

from longred_bench.kernels import relation_kl
from longred_bench.kernels.triton_impl import relation_kl_triton

GPU_CASES = [
    # batch, seq, heads, kv_s, kv_t, d_s, d_t, causal, mask
    pytest.param(2, 1024, 8, 2, 2, 64, 64, True, "left", id="1024-d64-causal-left"),
    pytest.param(2, 1024, 8, 2, 8, 128, 64, False, "right", id="1024-d128-64-noncausal"),
    pytest.param(1, 2048, 8, 2, 2, 128, 128, True, "right", id="2048-d128-causal-right"),
    pytest.param(1, 4096, 8, 2, 2, 64, 64, True, None, id="4096-d64-causal"),
    pytest.param(1, 4096, 8, 2, 1, 128, 128, False, "left", id="4096-d128-noncausal"),
]


@pytest.mark.gpu
@pytest.mark.parametrize("batch,seq,heads,kv_s,kv_t,d_s,d_t,causal,mask_kind", GPU_CASES)
def test_gpu_bf16_real_sizes(batch, seq, heads, kv_s, kv_t, d_s, d_t, causal, mask_kind):
    dtype = torch.bfloat16
    inputs = make_inputs(batch, heads, seq, kv_s, kv_t, d_s, d_t, dtype=dtype, seed=seq + d_s)
    mask = make_mask(mask_kind, batch, seq)
    compare_three_ways(inputs, mask, causal, dtype, tiles=relation_kl_triton)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "dtype,d_s,d_t",
    [(torch.float32, 64, 128), (torch.float16, 64, 128), (torch.float32, 64, 64)],
)
def test_gpu_other_dtypes(dtype, d_s, d_t):
    # fp32 at head dims <= 64 has tiles of its own (16 x 32 forward)
    inputs = make_inputs(2, 8, 1024, 2, 4, d_s, d_t, dtype=dtype, seed=21)
    mask = make_mask("left", 2, 1024)
    compare_three_ways(inputs, mask, True, dtype, tiles=relation_kl_triton)


@pytest.mark.gpu
def test_gpu_self_relation_and_mean_bf16():
    dtype = torch.bfloat16
    inputs = make_inputs(1, 8, 2048, 8, 2, 64, 64, dtype=dtype, seed=22)
    inputs[1] = inputs[0]
    mask = make_mask("right", 1, 2048)
    compare_three_ways(inputs, mask, True, dtype, self_relation=True, tiles=relation_kl_triton)

    def grads(fn, xs):
        leaves = [x.detach().clone() for x in xs]
        for x in leaves[:2]:
            x.requires_grad_(True)
        out = fn(*leaves, mask=mask, reduction="mean")
        return torch.autograd.grad(out, leaves[:2])

    ref = grads(naive, [x.to(F64) for x in inputs])
    same = grads(naive, inputs)
    got = grads(relation_kl_triton, inputs)
    for g, s, r in zip(got, same, ref, strict=True):
        assert_within_twice_naive(g, s, r, FLOOR[dtype], "mean grad")


@pytest.mark.gpu
def test_gpu_backward_is_deterministic():
    inputs = make_inputs(1, 8, 2048, 2, 2, 128, 128, dtype=torch.bfloat16, seed=23)
    upstream = torch.randn(1, 8, 2048, device=DEVICE)
    first = rows_and_grads(relation_kl_triton, inputs, upstream, causal=True)
    second = rows_and_grads(relation_kl_triton, inputs, upstream, causal=True)
    assert torch.equal(first[0], second[0])
    for g1, g2 in zip(first[1], second[1], strict=True):
        assert torch.equal(g1, g2)


def chunked(*args, **kwargs):
    return relation_kl(*args, impl="chunked", **kwargs)


@pytest.mark.gpu
@pytest.mark.parametrize("causal,mask_kind", [(True, "left"), (False, "right")])
def test_gpu_bf16_32k_against_chunked_fp64(causal, mask_kind):
    """At 32K tokens no materialised reference fits: the linear-memory chunked path in fp64 is
    the reference, and the chunked path at the input precision sets the tolerance."""
    dtype, seq = torch.bfloat16, 32768
    inputs = make_inputs(1, 4, seq, 2, 2, 64, 64, dtype=dtype, seed=24)
    mask = make_mask(mask_kind, 1, seq)
    upstream = make_upstream(inputs)
    kw = dict(mask=mask, causal=causal)
    ref_rows, ref_grads = rows_and_grads(chunked, [x.to(F64) for x in inputs], upstream, **kw)
    same_rows, same_grads = rows_and_grads(chunked, inputs, upstream, **kw)
    rows, grads = rows_and_grads(relation_kl_triton, inputs, upstream, **kw)
    assert torch.isfinite(rows).all()
    assert_within_twice_naive(rows, same_rows, ref_rows, FLOOR[dtype], "row KL at 32K")
    for name, got, same, ref in zip(("a_s", "b_s"), grads, same_grads, ref_grads, strict=True):
        assert torch.isfinite(got).all()
        assert_within_twice_naive(got, same, ref, FLOOR[dtype], f"grad {name} at 32K")
    assert (rows * ~mask[:, None, :] == 0).all()
