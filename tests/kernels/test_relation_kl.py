"""Tests for ``longred_bench.kernels.relation_kl``: naive reference, chunked path, dispatcher.

Exactness checks run in fp64 against the naive reference, which is itself checked against a
per-row brute-force loop.  Sizes are tiny so the whole file runs in seconds on CPU.
"""

from __future__ import annotations

import sys
import types

import pytest
import torch
from masks import make_mask

from longred_bench.kernels import (
    prepare_relation_kl_args,
    relation_kl,
    relation_kl_chunked,
    relation_kl_naive,
)
from longred_bench.kernels.chunked import default_block_size

F64 = torch.float64


def make_inputs(
    batch: int = 2,
    heads: int = 4,
    seq: int = 37,
    kv_s: int = 2,
    kv_t: int = 2,
    d_s: int = 8,
    d_t: int = 8,
    dtype: torch.dtype = F64,
    seed: int = 0,
    teacher_grad: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random ``a_s, b_s, a_t, b_t`` with the student requiring grad."""
    gen = torch.Generator().manual_seed(seed)

    def rnd(*shape: int, grad: bool) -> torch.Tensor:
        return torch.randn(*shape, generator=gen, dtype=F64).to(dtype).requires_grad_(grad)

    return (
        rnd(batch, heads, seq, d_s, grad=True),
        rnd(batch, kv_s, seq, d_s, grad=True),
        rnd(batch, heads, seq, d_t, grad=teacher_grad),
        rnd(batch, kv_t, seq, d_t, grad=teacher_grad),
    )


def brute_force_rows(a_s, b_s, a_t, b_t, mask, causal, scale_s, scale_t) -> torch.Tensor:
    """Per-row KL ``[B, H, n]`` from an explicit loop over rows and selected columns."""
    batch, heads, seq, _ = a_s.shape
    out = torch.zeros(batch, heads, seq, dtype=F64)
    for b in range(batch):
        for h in range(heads):
            hs = h // (heads // b_s.shape[1])
            ht = h // (heads // b_t.shape[1])
            for i in range(seq):
                if mask is not None and not mask[b, i]:
                    continue
                cols = [
                    j for j in range(seq) if (mask is None or mask[b, j]) and (not causal or j <= i)
                ]
                s = scale_s * b_s[b, hs, cols].double() @ a_s[b, h, i].double()
                t = scale_t * b_t[b, ht, cols].double() @ a_t[b, h, i].double()
                lp_s, lp_t = torch.log_softmax(s, 0), torch.log_softmax(t, 0)
                out[b, h, i] = (lp_t.exp() * (lp_t - lp_s)).sum()
    return out


def rows_and_grads(fn, inputs, upstream, **kwargs):
    """Per-row KL and the student gradients for ``sum(rows * upstream)``."""
    a_s, b_s = inputs[0], inputs[1]
    rows = fn(*inputs, reduction="none", **kwargs)
    grads = torch.autograd.grad((rows * upstream).sum(), (a_s, b_s))
    return rows.detach(), grads


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("mask_kind", [None, "left", "right", "dead_row"])
def test_naive_matches_brute_force(causal: bool, mask_kind: str | None) -> None:
    inputs = make_inputs(batch=2, heads=4, seq=9, kv_s=2, kv_t=1, d_s=5, d_t=3)
    mask = make_mask(mask_kind, 2, 9)
    got = relation_kl_naive(
        *inputs, mask=mask, causal=causal, scale_s=0.7, scale_t=1.3, reduction="none"
    )
    want = brute_force_rows(*inputs, mask, causal, 0.7, 1.3)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


CHUNKED_CASES = [
    # seq, block, causal, heads, kv_s, kv_t, d_s, d_t, mask
    pytest.param(37, 8, True, 4, 2, 2, 8, 8, None, id="causal-37-b8"),
    pytest.param(37, 8, False, 4, 2, 2, 8, 8, None, id="noncausal-37-b8"),
    pytest.param(1, 4, True, 2, 1, 2, 4, 4, None, id="seq1-causal"),
    pytest.param(1, 4, False, 2, 1, 2, 4, 4, "right", id="seq1-noncausal"),
    pytest.param(257, 64, True, 2, 1, 1, 4, 4, None, id="causal-257-b64"),
    pytest.param(257, 96, False, 2, 2, 1, 4, 4, "left", id="noncausal-257-b96-left"),
    pytest.param(37, 8, True, 6, 2, 3, 8, 8, None, id="gqa-6-2-3"),
    pytest.param(37, 16, False, 6, 2, 1, 8, 8, None, id="gqa-6-2-1"),
    pytest.param(37, 8, True, 6, 6, 2, 16, 4, None, id="headdim-16-vs-4"),
    pytest.param(37, 8, True, 4, 2, 2, 8, 8, "left", id="causal-left-pad"),
    pytest.param(37, 8, True, 4, 2, 2, 8, 8, "right", id="causal-right-pad"),
    pytest.param(37, 8, False, 4, 2, 2, 8, 8, "left", id="noncausal-left-pad"),
    pytest.param(37, 8, False, 4, 2, 2, 8, 8, "right", id="noncausal-right-pad"),
    pytest.param(37, 8, True, 4, 2, 2, 8, 8, "dead_row", id="causal-dead-batch-row"),
    pytest.param(37, 5, False, 4, 2, 2, 8, 8, "dead_row", id="noncausal-dead-batch-row"),
]


@pytest.mark.parametrize("seq,block,causal,heads,kv_s,kv_t,d_s,d_t,mask_kind", CHUNKED_CASES)
def test_chunked_matches_naive_fp64(seq, block, causal, heads, kv_s, kv_t, d_s, d_t, mask_kind):
    batch = 2
    inputs = make_inputs(batch, heads, seq, kv_s, kv_t, d_s, d_t, seed=seq + heads)
    mask = make_mask(mask_kind, batch, seq)
    upstream = torch.randn(batch, heads, seq, dtype=F64, generator=torch.Generator().manual_seed(1))
    kw = dict(mask=mask, causal=causal, scale_s=0.6, scale_t=0.9)
    ref_rows, ref_grads = rows_and_grads(relation_kl_naive, inputs, upstream, **kw)
    rows, grads = rows_and_grads(relation_kl_chunked, inputs, upstream, block_size=block, **kw)
    torch.testing.assert_close(rows, ref_rows, rtol=1e-10, atol=1e-12)
    for got, want in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)
    if seq > 1:  # with one column both distributions are the same point mass
        assert rows.abs().sum() > 0
    if mask is not None:
        assert (rows * ~mask[:, None, :] == 0).all()


@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("mask_kind", [None, "right"])
def test_reductions_match_naive_and_definition(reduction: str, mask_kind: str | None) -> None:
    inputs = make_inputs(batch=2, heads=6, seq=21, kv_s=3, kv_t=2)
    mask = make_mask(mask_kind, 2, 21)
    rows = relation_kl_naive(*inputs, mask=mask, reduction="none").detach()
    n_valid = 2 * 21 if mask is None else int(mask.sum())
    expected = rows.sum() if reduction == "sum" else rows.sum() / (n_valid * 6)

    ref = relation_kl_naive(*inputs, mask=mask, reduction=reduction)
    got = relation_kl_chunked(*inputs, mask=mask, reduction=reduction, block_size=4)
    assert got.shape == ()
    torch.testing.assert_close(ref.detach(), expected, rtol=1e-12, atol=0)
    torch.testing.assert_close(got.detach(), expected, rtol=1e-12, atol=0)
    ref_grads = torch.autograd.grad(ref, inputs[:2])
    grads = torch.autograd.grad(got, inputs[:2])
    for g, r in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(g, r, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("impl", ["naive", "chunked"])
def test_fully_masked_batch_row_gives_zero_kl_and_zero_grads(impl: str) -> None:
    a_s, b_s, a_t, b_t = make_inputs(batch=2, heads=4, seq=13)
    mask = torch.ones(2, 13, dtype=torch.bool)
    mask[1] = False
    rows = relation_kl(a_s, b_s, a_t, b_t, mask=mask, reduction="none", impl=impl)
    assert torch.isfinite(rows).all()
    assert (rows[1] == 0).all() and (rows[0, :, 1:] > 0).all()  # causal row 0 has one column
    rows.sum().backward()
    for g in (a_s.grad, b_s.grad):
        assert torch.isfinite(g).all()
        assert (g[1] == 0).all() and g[0].abs().sum() > 0


@pytest.mark.parametrize("impl", ["naive", "chunked"])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_all_rows_masked_is_zero_not_nan(impl: str, reduction: str) -> None:
    a_s, b_s, a_t, b_t = make_inputs(batch=2, heads=2, seq=5, kv_s=1, kv_t=1)
    mask = torch.zeros(2, 5, dtype=torch.int64)
    out = relation_kl(a_s, b_s, a_t, b_t, mask=mask, reduction=reduction, impl=impl)
    assert torch.isfinite(out).all() and (out == 0).all()
    out.sum().backward()
    assert (a_s.grad == 0).all() and (b_s.grad == 0).all()


def test_left_padding_rows_equal_unpadded_sequence() -> None:
    # Causal + left padding: each real row must see exactly the unpadded sequence's prefix.
    pad, seq = 4, 15
    a_s, b_s, a_t, b_t = make_inputs(batch=1, heads=2, seq=seq, kv_s=1, kv_t=2)
    mask = torch.ones(1, seq, dtype=torch.bool)
    mask[0, :pad] = False
    padded = relation_kl_chunked(a_s, b_s, a_t, b_t, mask=mask, reduction="none", block_size=4)
    trimmed = relation_kl_chunked(
        *(x[:, :, pad:] for x in (a_s, b_s, a_t, b_t)), reduction="none", block_size=4
    )
    torch.testing.assert_close(padded[:, :, pad:], trimmed, rtol=1e-12, atol=1e-14)
    assert (padded[:, :, :pad] == 0).all()


@pytest.mark.parametrize("causal", [True, False])
def test_right_padding_rows_equal_unpadded_sequence(causal: bool) -> None:
    keep, seq = 10, 15
    a_s, b_s, a_t, b_t = make_inputs(batch=1, heads=2, seq=seq, kv_s=2, kv_t=1)
    mask = torch.zeros(1, seq, dtype=torch.bool)
    mask[0, :keep] = True
    padded = relation_kl_chunked(
        a_s, b_s, a_t, b_t, mask=mask, causal=causal, reduction="none", block_size=4
    )
    trimmed = relation_kl_chunked(
        *(x[:, :, :keep] for x in (a_s, b_s, a_t, b_t)),
        causal=causal,
        reduction="none",
        block_size=4,
    )
    torch.testing.assert_close(padded[:, :, :keep], trimmed, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("causal", [True, False])
def test_self_relation_gets_gradient_from_both_roles(causal: bool) -> None:
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(2, 2, 19, 8, dtype=F64, generator=gen)
    t = torch.randn(2, 2, 19, 8, dtype=F64, generator=gen)
    mask = make_mask("left", 2, 19)

    def grad_of(fn, **kw):
        leaf = x.clone().requires_grad_(True)
        out = fn(leaf, leaf, t, t, mask=mask, causal=causal, reduction="sum", **kw)
        (g,) = torch.autograd.grad(out, leaf)
        return g

    ref = grad_of(relation_kl_naive)
    got = grad_of(relation_kl_chunked, block_size=4)
    torch.testing.assert_close(got, ref, rtol=1e-10, atol=1e-13)
    # One role alone gives a different gradient, so the check above sees both roles.
    leaf = x.clone().requires_grad_(True)
    one_role = relation_kl_chunked(
        leaf, x, t, t, mask=mask, causal=causal, reduction="sum", block_size=4
    )
    (g_one,) = torch.autograd.grad(one_role, leaf)
    assert (g_one - ref).abs().max() > 1e-3


def test_non_contiguous_inputs_and_partial_requires_grad() -> None:
    # [B, n, H, d] projections viewed as [B, H, n, d], as attention code produces them.
    gen = torch.Generator().manual_seed(11)
    raw = [torch.randn(2, 19, h, 8, dtype=F64, generator=gen) for h in (4, 2, 4, 1)]
    a_s, b_s, a_t, b_t = (x.transpose(1, 2) for x in raw)
    b_s.requires_grad_(True)  # a_s is a constant here: only the b_s path of backward runs
    mask = make_mask("right", 2, 19)
    kw = dict(mask=mask, causal=False, reduction="sum")
    ref = torch.autograd.grad(relation_kl_naive(a_s, b_s, a_t, b_t, **kw), b_s)[0]
    out = relation_kl_chunked(a_s, b_s, a_t, b_t, block_size=4, **kw)
    got = torch.autograd.grad(out, b_s)[0]
    torch.testing.assert_close(got, ref, rtol=1e-10, atol=1e-13)


def test_scales_default_and_explicit() -> None:
    inputs = make_inputs(d_s=16, d_t=4)
    default = relation_kl_chunked(*inputs, block_size=8)
    explicit = relation_kl_chunked(*inputs, scale_s=16**-0.5, scale_t=4**-0.5, block_size=8)
    swapped = relation_kl_chunked(*inputs, scale_s=4**-0.5, scale_t=16**-0.5, block_size=8)
    torch.testing.assert_close(default, explicit, rtol=0, atol=0)
    assert (default - swapped).abs() > 1e-3
    args = prepare_relation_kl_args(*inputs)
    assert args.scale_s == 16**-0.5 and args.scale_t == 4**-0.5


@pytest.mark.parametrize("impl", ["naive", "chunked"])
def test_identical_teacher_and_student_give_zero_and_kl_is_nonnegative(impl: str) -> None:
    a_s, b_s, a_t, b_t = make_inputs(heads=4, kv_s=2, kv_t=2, seq=23)
    mask = make_mask("right", 2, 23)
    same = relation_kl(a_s, b_s, a_s.detach(), b_s.detach(), mask=mask, reduction="none", impl=impl)
    assert same.abs().max() < 1e-12
    rows = relation_kl(a_s, b_s, a_t, b_t, mask=mask, reduction="none", impl=impl)
    assert (rows >= -1e-12).all() and rows.max() > 0.01


@pytest.mark.parametrize("causal", [True, False])
def test_fp32_error_within_twice_naive_fp32_error(causal: bool) -> None:
    inputs64 = make_inputs(batch=2, heads=4, seq=70, kv_s=2, kv_t=1, d_s=16, d_t=16, seed=7)
    inputs32 = [x.detach().float().requires_grad_(x.requires_grad) for x in inputs64]
    mask = make_mask("left", 2, 70)
    up64 = torch.randn(2, 4, 70, dtype=F64, generator=torch.Generator().manual_seed(5))
    kw = dict(mask=mask, causal=causal, scale_s=0.5, scale_t=0.4)
    truth = rows_and_grads(relation_kl_naive, inputs64, up64, **kw)
    naive32 = rows_and_grads(relation_kl_naive, inputs32, up64.float(), **kw)
    chunk32 = rows_and_grads(relation_kl_chunked, inputs32, up64.float(), block_size=16, **kw)
    assert chunk32[0].dtype == torch.float32 and chunk32[1][0].dtype == torch.float32
    pairs = [(truth[0], naive32[0], chunk32[0])]
    pairs += list(zip(truth[1], naive32[1], chunk32[1], strict=True))
    for exact, naive, chunked in pairs:
        err_naive = (naive.double() - exact).abs().max().item()
        err_chunked = (chunked.double() - exact).abs().max().item()
        assert err_chunked <= 2 * err_naive + 1e-7, (err_chunked, err_naive)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_inputs_compute_in_fp32(dtype: torch.dtype) -> None:
    inputs = make_inputs(seq=17, dtype=dtype)
    out = relation_kl_chunked(*inputs, reduction="none", block_size=4)
    assert out.dtype == torch.float32
    exact = relation_kl_naive(*(x.detach().double() for x in inputs), reduction="none")
    torch.testing.assert_close(out.double(), exact, rtol=1e-4, atol=1e-5)
    out.sum().backward()
    assert inputs[0].grad.dtype == dtype and inputs[1].grad.dtype == dtype
    assert torch.isfinite(inputs[0].grad.float()).all()


def test_fp64_output_is_fp64() -> None:
    inputs = make_inputs(seq=5)
    assert relation_kl_chunked(*inputs).dtype == F64
    assert relation_kl_naive(*inputs).dtype == F64


def test_chunked_teacher_is_constant() -> None:
    a_s, b_s, a_t, b_t = make_inputs(seq=11, teacher_grad=True)
    relation_kl_chunked(a_s, b_s, a_t, b_t, block_size=4).backward()
    assert a_t.grad is None and b_t.grad is None
    assert a_s.grad is not None and b_s.grad is not None


def test_chunked_saves_only_linear_memory_for_backward() -> None:
    seq = 64
    inputs = make_inputs(batch=1, heads=2, seq=seq, kv_s=1, kv_t=1, d_s=4, d_t=4)
    sizes: list[int] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        sizes.append(t.numel())
        return t

    def largest(fn, **kw) -> int:
        sizes.clear()
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            fn(*inputs, **kw)
        return max(sizes)

    # inputs are [1, 2, seq, 4]; the row statistics are four [1, 2, seq] tensors
    assert largest(relation_kl_chunked, block_size=8) <= 4 * 2 * seq
    assert largest(relation_kl_naive) >= 2 * seq * seq  # the check can tell the difference


def test_default_block_size_is_bounded() -> None:
    assert default_block_size(1, 4, 100) == 512
    assert default_block_size(8, 32, 1 << 20) == 16
    mid = default_block_size(1, 4, 16384)
    assert 16 <= mid <= 512 and mid & (mid - 1) == 0
    # On CPU blocks a quarter the size (cache-sized score tensors), within the same bounds.
    assert default_block_size(32, 4, 256) == 256
    assert default_block_size(32, 4, 256, cpu=True) == 64
    assert default_block_size(1, 4, 100, cpu=True) == 512


# ---------------------------------------------------------------- dispatcher and validation


def test_auto_on_cpu_is_chunked() -> None:
    a_s, b_s, a_t, b_t = make_inputs(seq=600, heads=2, kv_s=1, kv_t=1, d_s=4, d_t=4)
    auto = relation_kl(a_s, b_s, a_t, b_t, reduction="none")
    chunked = relation_kl(a_s, b_s, a_t, b_t, reduction="none", impl="chunked")
    torch.testing.assert_close(auto, chunked, rtol=0, atol=0)
    a_t.requires_grad_(True)
    relation_kl(a_s, b_s, a_t, b_t).backward()
    assert a_t.grad is None  # the naive path would give the teacher a gradient
    assert a_s.grad is not None


def test_invalid_impl_lists_valid_ones() -> None:
    with pytest.raises(ValueError, match="auto, naive, chunked, triton"):
        relation_kl(*make_inputs(seq=3), impl="cuda")


def test_triton_import_failure_is_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "longred_bench.kernels.triton_impl", None)
    with pytest.raises(ImportError, match="needs the triton package") as info:
        relation_kl(*make_inputs(seq=3), impl="triton")
    assert "\n" not in str(info.value)


def test_triton_impl_receives_the_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    fake = types.ModuleType("longred_bench.kernels.triton_impl")
    fake.relation_kl_triton = lambda *args: calls.append(args) or torch.zeros(())
    monkeypatch.setitem(sys.modules, "longred_bench.kernels.triton_impl", fake)
    inputs = make_inputs(seq=3)
    mask = torch.ones(2, 3, dtype=torch.bool)
    relation_kl(*inputs, mask=mask, causal=False, scale_t=0.25, reduction="sum", impl="triton")
    (args,) = calls
    assert all(x is y for x, y in zip(args[:4], inputs, strict=True))
    assert args[4] is mask and args[5:] == (False, None, 0.25, "sum")
    relation_kl(*inputs)  # CPU inputs: auto must not pick Triton even when it imports
    assert len(calls) == 1


def test_under_autocast_fp32_inputs_are_cast_and_the_kl_taken_outside_it() -> None:
    """Under bf16 autocast (mixed-precision training) fp32 q/k reach the relation KL in bf16, as
    the model's attention reads them, and the KL is that of the bf16 inputs computed in fp32,
    not one of fp32 inputs with autocast's bf16 matmuls inside; gradients come back in fp32."""
    inputs = [x.detach().float().requires_grad_(x.requires_grad) for x in make_inputs(seq=17)]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = relation_kl(*inputs, reduction="none", impl="chunked")
    want = relation_kl(*(x.detach().bfloat16() for x in inputs), reduction="none", impl="chunked")
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    full = relation_kl(*(x.detach() for x in inputs), reduction="none", impl="chunked")
    assert not torch.equal(got, full)
    got.sum().backward()
    assert inputs[0].grad.dtype == torch.float32 and torch.isfinite(inputs[0].grad).all()


def test_under_autocast_the_triton_kernel_gets_the_autocast_dtype(monkeypatch) -> None:
    """The Triton kernel's fp32 path is several times slower than its bf16 one: under bf16
    autocast it receives bf16 (fp32 inputs cast; bf16 and fp64 ones as given)."""
    calls = []
    fake = types.ModuleType("longred_bench.kernels.triton_impl")
    fake.relation_kl_triton = lambda *args: calls.append(args) or torch.zeros(())
    monkeypatch.setitem(sys.modules, "longred_bench.kernels.triton_impl", fake)
    inputs = [x.detach().float() for x in make_inputs(seq=3)]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        relation_kl(*inputs, impl="triton")
        relation_kl(*make_inputs(seq=3), impl="triton")
    assert [a.dtype for a in calls[0][:4]] == [torch.bfloat16] * 4
    assert [a.dtype for a in calls[1][:4]] == [F64] * 4
    relation_kl(*inputs, impl="triton")
    assert [a.dtype for a in calls[2][:4]] == [torch.float32] * 4
    with torch.autocast("cpu", dtype=torch.bfloat16), pytest.raises(ValueError, match="b_t must"):
        relation_kl(*inputs[:3], "b_t", impl="chunked")  # bad input: the same one-line error


@pytest.mark.parametrize(
    "mutate,message",
    [
        (lambda i: (i[0][0], *i[1:]), "must be 4-D"),
        (lambda i: (i[0], i[1][:, :, :4], i[2], i[3]), "b_s shape"),
        (lambda i: (i[0], i[1][..., :3], i[2], i[3]), "head_dim=4"),
        (lambda i: (i[0], i[1], i[2][:1], i[3]), "a_t \\[batch, query_heads, seq\\]"),
        (lambda i: (i[0], torch.cat([i[1], i[1][:, :1]], 1), i[2], i[3]), "multiple of b_s"),
        (lambda i: (i[0], i[1], i[2], i[3].float()), "share one dtype"),
        (lambda i: tuple(x.detach().long() for x in i), "dtype torch.int64"),
        (lambda i: (i[0], i[1], i[2], "b_t"), "b_t must be a torch.Tensor"),
    ],
)
@pytest.mark.parametrize("impl", ["auto", "naive", "chunked"])
def test_bad_shapes_and_dtypes_raise_value_error(mutate, message: str, impl: str) -> None:
    inputs = make_inputs(batch=2, heads=4, seq=5, kv_s=2, kv_t=2, d_s=4, d_t=4)
    with pytest.raises(ValueError, match=message) as info:
        relation_kl(*mutate(inputs), impl=impl)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(reduction="avg"), "reduction must be one of none, sum, mean"),
        (dict(mask=torch.ones(2, 4, dtype=torch.bool)), "mask must have shape"),
        (dict(mask=torch.full((2, 5), 2)), "only 0/1"),
        (dict(scale_s=float("nan")), "scale_s must be a finite number > 0"),
        (dict(scale_s=0.0), "scale_s must be a finite number > 0, got 0.0"),
        (dict(scale_t=-1), "scale_t must be a finite number > 0, got -1"),
        (dict(scale_t="big"), "scale_t must be a number"),
        (dict(causal=1), "causal must be a bool"),
    ],
)
@pytest.mark.parametrize("impl", ["naive", "chunked", "stats"])
def test_bad_options_raise_value_error(kwargs, message: str, impl: str) -> None:
    inputs = make_inputs(batch=2, heads=4, seq=5)
    with pytest.raises(ValueError, match=message):
        relation_kl(*inputs, impl=impl, **kwargs)


@pytest.mark.parametrize("block_size", [0, -3, 2.5, True])
def test_bad_block_size_raises(block_size) -> None:
    with pytest.raises(ValueError, match="block_size must be a positive int"):
        relation_kl_chunked(*make_inputs(seq=5), block_size=block_size)


def test_numpy_scalars_are_accepted_as_scales() -> None:
    """numpy's float32 is a real number too (it was refused as 'not a number')."""
    import numpy as np

    inputs = make_inputs(seq=7)
    for scale in (np.float32(0.3), np.float64(0.3), np.int64(1)):
        got = relation_kl(*inputs, scale_s=scale, scale_t=scale, reduction="none")
        want = relation_kl(*inputs, scale_s=float(scale), scale_t=float(scale), reduction="none")
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_float_mask_is_accepted() -> None:
    inputs = make_inputs(seq=9)
    bool_mask = make_mask("left", 2, 9)
    a = relation_kl_chunked(*inputs, mask=bool_mask, reduction="none", block_size=4)
    b = relation_kl_chunked(*inputs, mask=bool_mask.double(), reduction="none", block_size=4)
    torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_inputs_of_two_dtypes_meet_at_the_wider() -> None:
    """A bf16 teacher's q/k beside an fp32 student's: all four go in as fp32, none narrowed."""
    from longred_bench.kernels._common import at_common_dtype

    half, full = torch.ones(2, dtype=torch.bfloat16), torch.ones(2)
    assert [x.dtype for x in at_common_dtype(half, full)] == [torch.float32] * 2
    assert [x.dtype for x in at_common_dtype(full, half, half)] == [torch.float32] * 3
