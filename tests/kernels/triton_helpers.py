"""Shared helpers of the Triton relation-KL tests: random inputs and masks, the fp64 reference
and FlashAttention's accuracy rule (the Triton error at most twice the naive path's at the input
precision, plus a small floor)."""

from __future__ import annotations

import masks
import torch

from longred_bench.kernels import relation_kl
from longred_bench.kernels.triton_impl import TileConfig, relation_kl_triton

F64 = torch.float64
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
SMALL_TILES = TileConfig(block_m=16, block_n=16, num_warps=4, num_stages=1)
# Absolute floor of the 2x rule, relative to the largest reference value.
FLOOR = {torch.float32: 2e-6, torch.float16: 2e-4, torch.bfloat16: 2e-3}


def make_inputs(
    batch: int = 2,
    heads: int = 4,
    seq: int = 37,
    kv_s: int = 2,
    kv_t: int = 2,
    d_s: int = 16,
    d_t: int = 16,
    dtype: torch.dtype = torch.float32,
    seed: int = 0,
    device: str = DEVICE,
) -> list[torch.Tensor]:
    """Random ``[a_s, b_s, a_t, b_t]`` (no grad), rounded to ``dtype``."""
    gen = torch.Generator().manual_seed(seed)
    shapes = [
        (batch, heads, seq, d_s),
        (batch, kv_s, seq, d_s),
        (batch, heads, seq, d_t),
        (batch, kv_t, seq, d_t),
    ]
    return [
        torch.randn(*s, generator=gen, dtype=F64).to(device=device, dtype=dtype) for s in shapes
    ]


def make_mask(kind: str | None, batch: int, seq: int, device: str = DEVICE) -> torch.Tensor | None:
    """:func:`masks.make_mask` on the test device."""
    return masks.make_mask(kind, batch, seq, device)


def rows_and_grads(fn, inputs, upstream, self_relation=False, **kwargs):
    """Per-row KL and student grads of ``sum(rows * upstream)`` on fresh leaves of ``inputs``.

    With ``self_relation`` the student is ``(a_s, a_s)``: one leaf in both roles, one gradient.
    """
    leaves = [x.detach().clone() for x in inputs]
    leaves[0].requires_grad_(True)
    if self_relation:
        leaves[1] = leaves[0]
    else:
        leaves[1].requires_grad_(True)
    rows = fn(*leaves, reduction="none", **kwargs)
    wrt = leaves[:1] if self_relation else leaves[:2]
    grads = torch.autograd.grad((rows * upstream.to(rows.dtype)).sum(), wrt)
    return rows.detach(), list(grads)


def make_upstream(inputs: list[torch.Tensor], seed: int = 7) -> torch.Tensor:
    """Random fp64 upstream gradient for the per-row KL of ``inputs``."""
    gen = torch.Generator().manual_seed(seed)
    shape = inputs[0].shape[:3]
    return torch.randn(*shape, generator=gen, dtype=F64).to(inputs[0].device)


def naive(*args, **kwargs):
    return relation_kl(*args, impl="naive", **kwargs)


def triton_small(*args, **kwargs):
    return relation_kl_triton(*args, tile_config=SMALL_TILES, **kwargs)


def assert_within_twice_naive(got, same_prec, ref, floor, what, abs_floor=1e-7):
    """FlashAttention's rule in max norms: ``|got - ref| <= 2 |same_prec - ref| + floor``.

    The floor is ``floor`` relative to the largest reference value plus ``abs_floor``.
    """
    err = (got.double() - ref).abs().max().item()
    base = (same_prec.double() - ref).abs().max().item()
    bound = 2 * base + floor * ref.abs().max().item() + abs_floor
    assert err <= bound, f"{what}: error {err:.3e} > bound {bound:.3e} (naive {base:.3e})"


def compare_three_ways(inputs, mask, causal, dtype, self_relation=False, tiles=triton_small, **kw):
    """Triton vs fp64 naive, with the naive path at ``dtype`` setting the tolerance."""
    batch, heads, seq = inputs[0].shape[:3]
    upstream = make_upstream(inputs)
    kw = dict(mask=mask, causal=causal, self_relation=self_relation, **kw)
    ref_rows, ref_grads = rows_and_grads(naive, [x.to(F64) for x in inputs], upstream, **kw)
    nv_rows, nv_grads = rows_and_grads(naive, inputs, upstream, **kw)
    tr_rows, tr_grads = rows_and_grads(tiles, inputs, upstream, **kw)

    assert tr_rows.dtype == torch.float32 and tr_rows.shape == (batch, heads, seq)
    assert torch.isfinite(tr_rows).all()
    floor = FLOOR[dtype]
    assert_within_twice_naive(tr_rows, nv_rows, ref_rows, floor, "row KL")
    for name, got, same, ref in zip(("a_s", "b_s"), tr_grads, nv_grads, ref_grads, strict=False):
        assert got.dtype == dtype and got.shape == ref.shape
        assert torch.isfinite(got).all()
        assert_within_twice_naive(got, same, ref, floor, f"grad {name}")
    if mask is not None:
        assert (tr_rows * ~mask[:, None, :] == 0).all()
        assert (tr_grads[0] * ~mask[:, None, :, None] == 0).all()
    return tr_rows, tr_grads
