"""Tests for the Triton relation KL (``kernels/triton_impl.py``).

Without CUDA the kernels run in Triton's interpreter (``conftest.py`` sets ``TRITON_INTERPRET``),
so this tier uses tiny sizes and 16 x 16 tiles: several row/column tiles and partial tiles run
even at ``seq`` 37 or 70.  Accuracy follows FlashAttention's rule: against an fp64 autograd
reference computed from the same inputs, the Triton error may be at most twice the error of the
naive PyTorch path at the input precision, plus a small absolute floor.
``test_relation_kl_triton_gpu.py`` repeats the comparisons at real sizes with the default tiles.
"""

from __future__ import annotations

import functools

import pytest
import torch

pytest.importorskip("triton")

from triton_helpers import (
    DEVICE,
    F64,
    FLOOR,
    SMALL_TILES,
    assert_within_twice_naive,
    compare_three_ways,
    make_inputs,
    make_mask,
    make_upstream,
    naive,
    rows_and_grads,
    triton_small,
)

from longred_bench.kernels import relation_kl
from longred_bench.kernels.triton_impl import (
    TileConfig,
    default_tile_configs,
    relation_kl_backward,
    relation_kl_forward,
    relation_kl_triton,
)

CASES = [
    # seq, causal, heads, kv_s, kv_t, d_s, d_t, mask, dtype
    pytest.param(1, True, 2, 1, 2, 16, 16, None, torch.float32, id="seq1-causal"),
    pytest.param(1, False, 2, 2, 1, 16, 24, "right", torch.float32, id="seq1-noncausal"),
    pytest.param(17, True, 4, 4, 4, 16, 16, None, torch.float32, id="17-causal-mha"),
    pytest.param(17, False, 4, 2, 1, 16, 24, None, torch.float32, id="17-noncausal-gqa"),
    pytest.param(37, True, 4, 2, 1, 16, 24, "left", torch.float32, id="37-causal-left"),
    pytest.param(37, False, 4, 1, 2, 24, 16, "right", torch.float32, id="37-noncausal-right"),
    pytest.param(70, True, 4, 2, 2, 16, 16, "right", torch.float32, id="70-causal-right"),
    pytest.param(70, False, 4, 1, 1, 16, 16, "left", torch.float32, id="70-noncausal-left"),
    pytest.param(37, True, 4, 2, 2, 16, 16, "dead_row", torch.float32, id="37-causal-deadrow"),
    pytest.param(37, False, 4, 4, 2, 16, 16, "dead_row", torch.float32, id="37-noncaus-deadrow"),
    pytest.param(37, True, 4, 2, 1, 16, 24, "left", torch.bfloat16, id="37-causal-bf16"),
    pytest.param(37, False, 4, 1, 2, 24, 16, "right", torch.bfloat16, id="37-noncausal-bf16"),
    pytest.param(37, True, 4, 2, 1, 24, 16, "right", torch.float16, id="37-causal-fp16"),
    pytest.param(37, False, 4, 4, 2, 16, 24, "left", torch.float16, id="37-noncausal-fp16"),
]


@pytest.mark.parametrize("seq,causal,heads,kv_s,kv_t,d_s,d_t,mask_kind,dtype", CASES)
def test_matches_fp64_reference(seq, causal, heads, kv_s, kv_t, d_s, d_t, mask_kind, dtype):
    batch = 2
    inputs = make_inputs(batch, heads, seq, kv_s, kv_t, d_s, d_t, dtype=dtype, seed=seq + kv_s)
    mask = make_mask(mask_kind, batch, seq)
    rows, _ = compare_three_ways(inputs, mask, causal, dtype)
    if seq > 1:
        assert rows.abs().sum() > 0


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("block_m,block_n", [(32, 16), (16, 32)])
def test_rectangular_tiles(block_m, block_n, causal):
    # block_m != block_n: the causal column bound and the dB row start are not tile-aligned.
    inputs = make_inputs(2, 4, 70, 2, 1, 16, 24, seed=17)
    mask = make_mask("left", 2, 70)
    config = TileConfig(block_m=block_m, block_n=block_n, num_warps=4, num_stages=1)
    tiles = functools.partial(relation_kl_triton, tile_config=config)
    compare_three_ways(inputs, mask, causal, torch.float32, tiles=tiles)


SLOW = pytest.mark.slow


@pytest.mark.parametrize(
    "dtype,causal",
    [
        (torch.bfloat16, True),
        pytest.param(torch.bfloat16, False, marks=SLOW),
        pytest.param(torch.float32, True, marks=SLOW),
        pytest.param(torch.float32, False, marks=SLOW),
        pytest.param(torch.float16, True, marks=SLOW),
        pytest.param(torch.float16, False, marks=SLOW),
    ],
)
def test_matches_fp64_reference_default_tiles_longer(dtype, causal):
    inputs = make_inputs(2, 4, 150, 2, 1, 24, 40, dtype=dtype, seed=3)
    mask = make_mask("left", 2, 150)
    compare_three_ways(inputs, mask, causal, dtype, tiles=relation_kl_triton)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_self_relation_gets_both_contributions(causal, dtype):
    inputs = make_inputs(2, 2, 37, 2, 1, 16, 24, dtype=dtype, seed=11)
    inputs[1] = inputs[0]
    mask = make_mask("right", 2, 37)
    _, grads = compare_three_ways(inputs, mask, causal, dtype, self_relation=True)
    assert len(grads) == 1
    # The same values as two separate leaves: the self-relation gradient is their sum.
    _, (ga, gb) = rows_and_grads(
        triton_small, inputs, make_upstream(inputs), mask=mask, causal=causal
    )
    assert gb.abs().sum() > 0
    tol = 1e-6 if dtype == torch.float32 else 2e-3
    torch.testing.assert_close(grads[0].float(), ga.float() + gb.float(), rtol=tol, atol=tol)


def test_a_strided_self_relation_saves_one_copy_a_side():
    """LinearARD passes a layer's q (a strided view after RoPE) as both operands: one
    contiguous copy of the student's and one of the teacher's are saved for the backward pass,
    not two each, and the result and gradient are those of contiguous inputs."""
    gen = torch.Generator().manual_seed(3)
    base = torch.randn(2, 40, 2, 16, generator=gen).to(DEVICE).requires_grad_(True)  # [B, n, H, d]
    teacher = torch.randn(2, 40, 2, 16, generator=gen).to(DEVICE).transpose(1, 2)
    q = base.transpose(1, 2)  # [B, H, n, d], not contiguous
    assert not q.is_contiguous()
    saved = []

    def pack(t):
        saved.append(t.untyped_storage().data_ptr() if t.numel() == q.numel() else None)
        return t.detach()

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        got = relation_kl_triton(
            q, q, teacher, teacher, None, True, None, None, "sum", tile_config=SMALL_TILES
        )
    assert len({p for p in saved if p is not None}) == 2
    (grad,) = torch.autograd.grad(got, base)
    plain = q.detach().contiguous().requires_grad_(True)
    want = relation_kl_triton(plain, plain, teacher.contiguous(), teacher.contiguous(),
                              None, True, None, None, "sum", tile_config=SMALL_TILES)  # fmt: skip
    (want_grad,) = torch.autograd.grad(want, plain)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(grad.transpose(1, 2), want_grad)


@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("mask_kind", [None, "left"])
def test_reductions_match_fp64_reference(reduction, mask_kind):
    inputs = make_inputs(2, 4, 23, 2, 1, 16, 24, seed=5)
    mask = make_mask(mask_kind, 2, 23)
    kw = dict(mask=mask, causal=True, scale_s=0.3, scale_t=0.45, reduction=reduction)

    def value_and_grads(fn, xs):
        leaves = [x.detach().clone() for x in xs]
        for x in leaves[:2]:
            x.requires_grad_(True)
        out = fn(*leaves, **kw)
        return out.detach(), torch.autograd.grad(out, leaves[:2])

    ref, ref_grads = value_and_grads(naive, [x.to(F64) for x in inputs])
    _, same_grads = value_and_grads(naive, inputs)
    got, grads = value_and_grads(triton_small, inputs)
    assert got.shape == () and got.dtype == torch.float32
    torch.testing.assert_close(got.double(), ref, rtol=2e-6, atol=1e-7)
    for name, g, s, r in zip(("a_s", "b_s"), grads, same_grads, ref_grads, strict=True):
        assert g.abs().max() > 0
        assert_within_twice_naive(g, s, r, FLOOR[torch.float32], f"{reduction} grad {name}")


def test_mean_reduction_fp16_tiny_row_weights():
    # mean -> every row weight is 1 / (valid rows x heads); the fp16 split must not underflow.
    inputs = make_inputs(2, 4, 70, 2, 1, 16, 16, dtype=torch.float16, seed=2)
    mask = make_mask("right", 2, 70)

    def grads(fn, xs):
        leaves = [x.detach().clone() for x in xs]
        for x in leaves[:2]:
            x.requires_grad_(True)
        out = fn(*leaves, mask=mask, causal=False, reduction="mean")
        return torch.autograd.grad(out, leaves[:2])

    ref = grads(naive, [x.to(F64) for x in inputs])
    same = grads(naive, inputs)
    got = grads(triton_small, inputs)
    for g, s, r in zip(got, same, ref, strict=True):
        assert g.abs().max() > 0
        assert_within_twice_naive(g, s, r, FLOOR[torch.float16], "mean grad")


def test_fp16_small_upstream_gradient_does_not_underflow():
    # Row weights around 1e-4 (e.g. a mean over ~1e4 rows): the weighted G of the dB kernel
    # would sit in fp16's subnormal range without the per-tile normalisation.
    inputs = make_inputs(2, 4, 37, 2, 2, 16, 16, dtype=torch.float16, seed=19)
    upstream = 1e-4 * make_upstream(inputs)
    ref = rows_and_grads(naive, [x.to(F64) for x in inputs], upstream, causal=False)[1]
    same = rows_and_grads(naive, inputs, upstream, causal=False)[1]
    got = rows_and_grads(triton_small, inputs, upstream, causal=False)[1]
    for name, g, s, r in zip(("a_s", "b_s"), got, same, ref, strict=True):
        assert_within_twice_naive(g, s, r, FLOOR[torch.float16], f"grad {name}", abs_floor=0.0)


@pytest.mark.parametrize("causal", [True, False])
def test_fully_masked_batch_row_gives_zero_kl_and_zero_grads(causal):
    inputs = make_inputs(2, 4, 21, 2, 2, 16, 16, seed=4)
    a_s, b_s = (x.clone().requires_grad_(True) for x in inputs[:2])
    mask = torch.ones(2, 21, dtype=torch.bool, device=DEVICE)
    mask[1] = False
    rows = triton_small(a_s, b_s, *inputs[2:], mask=mask, causal=causal, reduction="none")
    assert torch.isfinite(rows).all()
    assert (rows[1] == 0).all() and rows[0].abs().sum() > 0
    rows.sum().backward()
    for g in (a_s.grad, b_s.grad):
        assert torch.isfinite(g).all()
        assert (g[1] == 0).all() and g[0].abs().sum() > 0


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_all_rows_masked_is_zero_not_nan(reduction):
    inputs = make_inputs(2, 2, 5, 1, 1, 16, 16, seed=1)
    a_s, b_s = (x.clone().requires_grad_(True) for x in inputs[:2])
    mask = torch.zeros(2, 5, dtype=torch.bool, device=DEVICE)
    out = triton_small(a_s, b_s, *inputs[2:], mask=mask, reduction=reduction)
    assert torch.isfinite(out).all() and (out == 0).all()
    out.sum().backward()
    assert (a_s.grad == 0).all() and (b_s.grad == 0).all()


def test_padded_rows_equal_unpadded_sequence():
    # Left padding under causal masking: real rows see exactly the unpadded prefix.
    pad, seq = 5, 30
    inputs = make_inputs(1, 2, seq, 1, 2, 16, 16, seed=9)
    mask = torch.ones(1, seq, dtype=torch.bool, device=DEVICE)
    mask[0, :pad] = False
    padded = triton_small(*inputs, mask=mask, reduction="none")
    trimmed = triton_small(*(x[:, :, pad:].contiguous() for x in inputs), reduction="none")
    torch.testing.assert_close(padded[:, :, pad:], trimmed, rtol=1e-5, atol=1e-6)
    assert (padded[:, :, :pad] == 0).all()


def test_teacher_gets_no_gradient_and_student_grad_is_optional():
    inputs = make_inputs(1, 2, 17, 1, 1, 16, 16, seed=6)
    a_s, b_s, a_t, b_t = (x.clone().requires_grad_(True) for x in inputs)
    out = triton_small(a_s, b_s, a_t, b_t, reduction="sum")
    out.backward()
    assert a_t.grad is None and b_t.grad is None
    assert a_s.grad is not None and b_s.grad is not None

    b_only = inputs[1].clone().requires_grad_(True)
    out = triton_small(inputs[0], b_only, inputs[2], inputs[3], reduction="sum")
    (grad,) = torch.autograd.grad(out, (b_only,))
    torch.testing.assert_close(grad, b_s.grad)


def test_backward_is_deterministic():
    inputs = make_inputs(2, 4, 37, 1, 2, 16, 24, seed=8)
    mask = make_mask("left", 2, 37)
    upstream = torch.randn(2, 4, 37, generator=torch.Generator().manual_seed(3)).to(DEVICE)
    first = rows_and_grads(triton_small, inputs, upstream, mask=mask)
    second = rows_and_grads(triton_small, inputs, upstream, mask=mask)
    assert torch.equal(first[0], second[0])
    for g1, g2 in zip(first[1], second[1], strict=True):
        assert torch.equal(g1, g2)


@pytest.mark.parametrize("causal", [True, False])
def test_agrees_with_chunked(causal):
    inputs = make_inputs(2, 4, 37, 2, 1, 16, 24, seed=12)
    mask = make_mask("right", 2, 37)
    upstream = torch.randn(2, 4, 37, generator=torch.Generator().manual_seed(4)).to(DEVICE)

    def chunked(*args, **kwargs):
        return relation_kl(*args, impl="chunked", **kwargs)

    ch_rows, ch_grads = rows_and_grads(chunked, inputs, upstream, mask=mask, causal=causal)
    tr_rows, tr_grads = rows_and_grads(triton_small, inputs, upstream, mask=mask, causal=causal)
    torch.testing.assert_close(tr_rows, ch_rows, rtol=1e-5, atol=1e-5)
    for g, c in zip(tr_grads, ch_grads, strict=True):
        torch.testing.assert_close(g, c, rtol=1e-4, atol=1e-5)


def test_dispatcher_routes_to_triton_and_default_scales():
    inputs = make_inputs(2, 2, 19, 1, 2, 16, 24, seed=13)
    mask = make_mask("right", 2, 19)
    via_dispatcher = relation_kl(*inputs, mask=mask, reduction="none", impl="triton")
    direct = relation_kl_triton(*inputs, mask, True, 16**-0.5, 24**-0.5, "none")
    assert torch.equal(via_dispatcher, direct)
    ref = naive(*(x.double() for x in inputs), mask=mask, reduction="none")
    torch.testing.assert_close(via_dispatcher.double(), ref, rtol=1e-5, atol=1e-6)


def test_fp64_inputs_return_fp64_and_float_mask_is_accepted():
    inputs = make_inputs(1, 2, 17, 2, 1, 16, 16, dtype=F64, seed=14)
    a_s = inputs[0].clone().requires_grad_(True)
    mask = make_mask("left", 1, 17).to(torch.float32)
    out = triton_small(a_s, *inputs[1:], mask=mask, reduction="mean")
    assert out.dtype == F64
    (grad,) = torch.autograd.grad(out, (a_s,))
    assert grad.dtype == F64
    ref = naive(*inputs, mask=mask, reduction="mean")
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-7)


def test_launch_wrappers_check_operands():
    a_s, b_s, a_t, b_t = make_inputs(1, 2, 17, 1, 1, 16, 16, seed=15)
    ok = (a_s, b_s, a_t, b_t, None, True, 0.25, 0.25, SMALL_TILES)
    relation_kl_forward(*ok)
    with pytest.raises(ValueError, match="contiguous"):
        relation_kl_forward(a_s.transpose(2, 3).contiguous().transpose(2, 3), *ok[1:])
    with pytest.raises(ValueError, match="dtype"):
        relation_kl_forward(a_s, b_s.half(), *ok[2:])
    with pytest.raises(ValueError, match="dtype"):
        relation_kl_forward(a_s.double(), b_s.double(), a_t.double(), b_t.double(), *ok[4:])
    with pytest.raises(ValueError, match="b_s shape"):
        relation_kl_forward(a_s, b_s[:, :, :9].contiguous(), *ok[2:])
    with pytest.raises(ValueError, match="mask"):
        relation_kl_forward(*ok[:4], torch.ones(1, 17, dtype=torch.bool, device=DEVICE), *ok[5:])
    with pytest.raises(ValueError, match="positive"):  # the row max is taken before scaling
        relation_kl_forward(*ok[:6], -0.25, 0.25, SMALL_TILES)
    lse = torch.zeros(1, 2, 17, device=DEVICE)
    with pytest.raises(ValueError, match="grad_rows"):
        relation_kl_backward("a", *ok[:5], lse, lse, lse.double(), *ok[5:])


def test_tile_config_is_validated_and_defaults_are_powers_of_two():
    with pytest.raises(ValueError, match="power of two"):
        TileConfig(block_m=24, block_n=16)
    with pytest.raises(ValueError, match="power of two"):
        TileConfig(block_m=16, block_n=8)
    for d_s, d_t in ((16, 24), (64, 64), (128, 96), (256, 64)):
        for dtype in (torch.float32, torch.bfloat16):
            for cfg in default_tile_configs(d_s, d_t, dtype):
                for block in (cfg.block_m, cfg.block_n):
                    assert block >= 16 and block & (block - 1) == 0
