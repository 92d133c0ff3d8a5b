"""Triton relation KL: one-pass forward, deterministic two-kernel backward.

Scores ``S = scale * A B^T`` are never stored.  The forward kernel runs one program per
(row tile, batch x query head) and sweeps once over the column tiles (only up to the diagonal
when causal), carrying for every row the online log-sum-exp state of student and teacher
(running max ``m`` and rescaled sum ``l``) and ``acc = sum_j exp(S_t - m_t) (S_t - S_s)``,
rescaled whenever ``m_t`` grows.  At the end ``KL = acc / l_t - LSE_t + LSE_s``; it writes the
per-row KL and the two fp32 ``LSE`` vectors (``O(n)`` memory).

The backward pass recomputes scores from the inputs and the saved ``LSE`` and forms
``G = (P_s - P_t) * dKL`` in fp32.  Like FlashAttention-2 it uses two kernels and no atomics,
so it is deterministic: the dA kernel owns a row tile (``dA = scale_s G B_s``, sweeping column
tiles) and the dB kernel owns a column tile of one student kv head (``dB = scale_s G^T A_s``,
sweeping row tiles and the query heads of its GQA group).  With fp16/bf16 inputs ``G`` is
split into a high and a low half of the input dtype, so both products keep about twice the
input precision while running on tensor cores; fp32 inputs use IEEE fp32 dots.

Invalid entries get the finite score ``MASK_VALUE`` (no ``-inf`` arithmetic), invalid rows
get KL 0 and no gradient.  Head dims are padded to a power of two (at least 16) by masked
loads.  The teacher is a constant: ``a_t`` and ``b_t`` get no gradient.  fp64 inputs are
computed in fp32 and the result is returned as fp64.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from ._common import MASK_VALUE, RelationKLArgs, prepare_relation_kl_args, reduce_row_kl

_NEG = tl.constexpr(MASK_VALUE)
_KERNEL_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


# --------------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------------


@triton.jit
def _dot(x, y, F32: tl.constexpr):
    """``x @ y`` with fp32 accumulation; IEEE precision for fp32 operands."""
    if F32:  # noqa: SIM108 (a static branch reads clearer in a kernel)
        out = tl.dot(x, y, input_precision="ieee")
    else:
        out = tl.dot(x, y)
    return out


@triton.jit
def _dot_split(g, y, F32: tl.constexpr):
    """``g @ y`` for fp32 ``g``; low-precision ``y`` gets ``g`` as a high + low pair."""
    if F32:
        out = tl.dot(g, y, input_precision="ieee")
    else:
        hi = g.to(y.dtype)
        lo = (g - hi.to(tl.float32)).to(y.dtype)
        out = tl.dot(hi, y) + tl.dot(lo, y)
    return out


@triton.jit
def _load_rows(ptr, idx, n, stride_n, dim, D: tl.constexpr, UPCAST: tl.constexpr):
    """Load rows ``idx`` of an ``[n, dim]`` slice as ``[len(idx), D]`` (zero padded)."""
    offs_d = tl.arange(0, D)
    ptrs = ptr + idx[:, None] * stride_n + offs_d[None, :]
    x = tl.load(ptrs, mask=(idx[:, None] < n) & (offs_d[None, :] < dim), other=0.0)
    if UPCAST:
        x = x.to(tl.float32)
    return x


@triton.jit
def _load_cols_t(ptr, idx, n, stride_n, dim, D: tl.constexpr, UPCAST: tl.constexpr):
    """Load rows ``idx`` of an ``[n, dim]`` slice transposed, as ``[D, len(idx)]``."""
    offs_d = tl.arange(0, D)
    ptrs = ptr + offs_d[:, None] + idx[None, :] * stride_n
    x = tl.load(ptrs, mask=(offs_d[:, None] < dim) & (idx[None, :] < n), other=0.0)
    if UPCAST:
        x = x.to(tl.float32)
    return x


@triton.jit
def _token_ok(mask_ptr, idx, n, HAS_MASK: tl.constexpr):
    """In-range and (with a mask) real tokens among positions ``idx``."""
    ok = idx < n
    if HAS_MASK:
        ok = ok & (tl.load(mask_ptr + idx, mask=ok, other=0) != 0)
    return ok


@triton.jit
def _relkl_fwd_kernel(
    A_s, B_s, A_t, B_t, MASK, KL, LSE_s, LSE_t,
    sa_s_b, sa_s_h, sa_s_n,
    sb_s_b, sb_s_h, sb_s_n,
    sa_t_b, sa_t_h, sa_t_n,
    sb_t_b, sb_t_h, sb_t_n,
    n, H, group_s, group_t, d_s, d_t, scale_s, scale_t,
    DS: tl.constexpr, DT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, HAS_MASK: tl.constexpr,
    UPCAST: tl.constexpr, F32: tl.constexpr,
):  # fmt: skip
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = (pid_bh // H).to(tl.int64)
    h = (pid_bh % H).to(tl.int64)
    a_s_ptr = A_s + b * sa_s_b + h * sa_s_h
    a_t_ptr = A_t + b * sa_t_b + h * sa_t_h
    b_s_ptr = B_s + b * sb_s_b + (h // group_s) * sb_s_h
    b_t_ptr = B_t + b * sb_t_b + (h // group_t) * sb_t_h
    mask_ptr = MASK + b * n

    start_m = pid_m * BLOCK_M
    rows = start_m + tl.arange(0, BLOCK_M)
    a_s = _load_rows(a_s_ptr, rows, n, sa_s_n, d_s, DS, UPCAST)
    a_t = _load_rows(a_t_ptr, rows, n, sa_t_n, d_t, DT, UPCAST)

    m_s = tl.full([BLOCK_M], _NEG, tl.float32)
    m_t = tl.full([BLOCK_M], _NEG, tl.float32)
    l_s = tl.zeros([BLOCK_M], tl.float32)
    l_t = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M], tl.float32)

    hi = n
    if CAUSAL:
        hi = tl.minimum(n, start_m + BLOCK_M)
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + tl.arange(0, BLOCK_N)
        valid = _token_ok(mask_ptr, cols, n, HAS_MASK)[None, :]
        if CAUSAL:
            valid = valid & (cols[None, :] <= rows[:, None])
        bt_s = _load_cols_t(b_s_ptr, cols, n, sb_s_n, d_s, DS, UPCAST)
        bt_t = _load_cols_t(b_t_ptr, cols, n, sb_t_n, d_t, DT, UPCAST)
        s_s = tl.where(valid, _dot(a_s, bt_s, F32) * scale_s, _NEG)
        s_t = tl.where(valid, _dot(a_t, bt_t, F32) * scale_t, _NEG)

        new_m_s = tl.maximum(m_s, tl.max(s_s, 1))
        l_s = l_s * tl.exp(m_s - new_m_s) + tl.sum(tl.exp(s_s - new_m_s[:, None]), 1)
        m_s = new_m_s

        new_m_t = tl.maximum(m_t, tl.max(s_t, 1))
        alpha_t = tl.exp(m_t - new_m_t)
        p_t = tl.exp(s_t - new_m_t[:, None])
        l_t = l_t * alpha_t + tl.sum(p_t, 1)
        # Invalid entries hold _NEG in both score tiles, so their difference is exactly 0.
        acc = acc * alpha_t + tl.sum(p_t * (s_t - s_s), 1)
        m_t = new_m_t

    lse_s = m_s + tl.log(l_s)
    lse_t = m_t + tl.log(l_t)
    kl = acc / l_t - lse_t + lse_s
    row_ok = _token_ok(mask_ptr, rows, n, HAS_MASK)
    out = pid_bh.to(tl.int64) * n + rows
    in_range = rows < n
    tl.store(KL + out, tl.where(row_ok, kl, 0.0), mask=in_range)
    tl.store(LSE_s + out, lse_s, mask=in_range)
    tl.store(LSE_t + out, lse_t, mask=in_range)


@triton.jit
def _relkl_bwd_da_kernel(
    A_s, B_s, A_t, B_t, MASK, LSE_s, LSE_t, DKL, DA,
    sa_s_b, sa_s_h, sa_s_n,
    sb_s_b, sb_s_h, sb_s_n,
    sa_t_b, sa_t_h, sa_t_n,
    sb_t_b, sb_t_h, sb_t_n,
    n, H, group_s, group_t, d_s, d_t, scale_s, scale_t,
    DS: tl.constexpr, DT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, HAS_MASK: tl.constexpr,
    UPCAST: tl.constexpr, F32: tl.constexpr,
):  # fmt: skip
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = (pid_bh // H).to(tl.int64)
    h = (pid_bh % H).to(tl.int64)
    a_s_ptr = A_s + b * sa_s_b + h * sa_s_h
    a_t_ptr = A_t + b * sa_t_b + h * sa_t_h
    b_s_ptr = B_s + b * sb_s_b + (h // group_s) * sb_s_h
    b_t_ptr = B_t + b * sb_t_b + (h // group_t) * sb_t_h
    mask_ptr = MASK + b * n

    start_m = pid_m * BLOCK_M
    rows = start_m + tl.arange(0, BLOCK_M)
    in_range = rows < n
    row_ok = _token_ok(mask_ptr, rows, n, HAS_MASK)
    a_s = _load_rows(a_s_ptr, rows, n, sa_s_n, d_s, DS, UPCAST)
    a_t = _load_rows(a_t_ptr, rows, n, sa_t_n, d_t, DT, UPCAST)
    vec = pid_bh.to(tl.int64) * n + rows
    lse_s = tl.load(LSE_s + vec, mask=in_range, other=0.0)
    lse_t = tl.load(LSE_t + vec, mask=in_range, other=0.0)
    w = tl.where(row_ok, tl.load(DKL + vec, mask=in_range, other=0.0), 0.0)

    acc = tl.zeros([BLOCK_M, DS], tl.float32)
    hi = n
    if CAUSAL:
        hi = tl.minimum(n, start_m + BLOCK_M)
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + tl.arange(0, BLOCK_N)
        valid = row_ok[:, None] & _token_ok(mask_ptr, cols, n, HAS_MASK)[None, :]
        if CAUSAL:
            valid = valid & (cols[None, :] <= rows[:, None])
        b_s = _load_rows(b_s_ptr, cols, n, sb_s_n, d_s, DS, UPCAST)
        bt_t = _load_cols_t(b_t_ptr, cols, n, sb_t_n, d_t, DT, UPCAST)
        s_s = _dot(a_s, tl.trans(b_s), F32) * scale_s
        s_t = _dot(a_t, bt_t, F32) * scale_t
        p_s = tl.exp(tl.where(valid, s_s - lse_s[:, None], _NEG))
        p_t = tl.exp(tl.where(valid, s_t - lse_t[:, None], _NEG))
        # |P_s - P_t| <= 1; the row weight is applied after the sweep.
        acc += _dot_split(p_s - p_t, b_s, F32)

    acc = acc * (w * scale_s)[:, None]
    offs_d = tl.arange(0, DS)
    da_ptrs = DA + b * sa_s_b + h * sa_s_h + rows[:, None] * sa_s_n + offs_d[None, :]
    tl.store(
        da_ptrs,
        acc.to(DA.dtype.element_ty),
        mask=in_range[:, None] & (offs_d[None, :] < d_s),
    )


@triton.jit
def _relkl_bwd_db_kernel(
    A_s, B_s, A_t, B_t, MASK, LSE_s, LSE_t, DKL, DB,
    sa_s_b, sa_s_h, sa_s_n,
    sb_s_b, sb_s_h, sb_s_n,
    sa_t_b, sa_t_h, sa_t_n,
    sb_t_b, sb_t_h, sb_t_n,
    n, H, KV_S, group_s, group_t, d_s, d_t, scale_s, scale_t,
    DS: tl.constexpr, DT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, HAS_MASK: tl.constexpr,
    UPCAST: tl.constexpr, F32: tl.constexpr,
):  # fmt: skip
    pid_n = tl.program_id(0)
    pid_bk = tl.program_id(1)
    b = (pid_bk // KV_S).to(tl.int64)
    g = (pid_bk % KV_S).to(tl.int64)
    b_s_ptr = B_s + b * sb_s_b + g * sb_s_h
    mask_ptr = MASK + b * n

    start_n = pid_n * BLOCK_N
    cols = start_n + tl.arange(0, BLOCK_N)
    col_ok = _token_ok(mask_ptr, cols, n, HAS_MASK)
    b_s = _load_rows(b_s_ptr, cols, n, sb_s_n, d_s, DS, UPCAST)

    acc = tl.zeros([BLOCK_N, DS], tl.float32)
    lo = 0
    if CAUSAL:
        lo = (start_n // BLOCK_M) * BLOCK_M
    for k in range(0, group_s):
        h = g * group_s + k
        a_s_ptr = A_s + b * sa_s_b + h * sa_s_h
        a_t_ptr = A_t + b * sa_t_b + h * sa_t_h
        b_t_ptr = B_t + b * sb_t_b + (h // group_t) * sb_t_h
        b_t = _load_rows(b_t_ptr, cols, n, sb_t_n, d_t, DT, UPCAST)
        vec_base = (b * H + h) * n
        for start_m in range(lo, n, BLOCK_M):
            rows = start_m + tl.arange(0, BLOCK_M)
            in_range = rows < n
            row_ok = _token_ok(mask_ptr, rows, n, HAS_MASK)
            valid = col_ok[:, None] & row_ok[None, :]
            if CAUSAL:
                valid = valid & (cols[:, None] <= rows[None, :])
            a_s = _load_rows(a_s_ptr, rows, n, sa_s_n, d_s, DS, UPCAST)
            at_t = _load_cols_t(a_t_ptr, rows, n, sa_t_n, d_t, DT, UPCAST)
            lse_s = tl.load(LSE_s + vec_base + rows, mask=in_range, other=0.0)
            lse_t = tl.load(LSE_t + vec_base + rows, mask=in_range, other=0.0)
            w = tl.where(row_ok, tl.load(DKL + vec_base + rows, mask=in_range, other=0.0), 0.0)
            # Transposed score tiles [BLOCK_N, BLOCK_M]: column j of the relation is row here.
            st_s = _dot(b_s, tl.trans(a_s), F32) * scale_s
            st_t = _dot(b_t, at_t, F32) * scale_t
            pt_s = tl.exp(tl.where(valid, st_s - lse_s[None, :], _NEG))
            pt_t = tl.exp(tl.where(valid, st_t - lse_t[None, :], _NEG))
            if F32:
                acc += _dot_split((pt_s - pt_t) * w[None, :], a_s, F32)
            else:
                # Normalise the row weights so the low-precision split neither underflows
                # (tiny mean-reduction weights) nor overflows; scale back in fp32.
                w_max = tl.max(tl.abs(w), 0)
                norm = tl.where(w_max > 0.0, w_max, 1.0)
                acc += _dot_split((pt_s - pt_t) * (w / norm)[None, :], a_s, F32) * norm

    acc = acc * scale_s
    offs_d = tl.arange(0, DS)
    db_ptrs = DB + b * sb_s_b + g * sb_s_h + cols[:, None] * sb_s_n + offs_d[None, :]
    tl.store(
        db_ptrs,
        acc.to(DB.dtype.element_ty),
        mask=(cols[:, None] < n) & (offs_d[None, :] < d_s),
    )


# --------------------------------------------------------------------------------------------
# Launch wrappers
# --------------------------------------------------------------------------------------------


def _interpreted() -> bool:
    """True when the kernels above run in Triton's CPU interpreter."""
    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:
        return os.environ.get("TRITON_INTERPRET", "0") == "1"
    return isinstance(_relkl_fwd_kernel, InterpretedFunction)


@dataclass(frozen=True)
class TileConfig:
    """Tile sizes and launch options of one kernel launch (forward, or both backward kernels).

    ``block_m`` rows and ``block_n`` columns per score tile (powers of two, at least 16).
    """

    block_m: int
    block_n: int
    num_warps: int = 4
    num_stages: int = 2

    def __post_init__(self) -> None:
        for name in ("block_m", "block_n"):
            value = getattr(self, name)
            if value < 16 or value & (value - 1):
                raise ValueError(f"relation_kl triton: {name} must be a power of two >= 16")


def _pad_dim(d: int) -> int:
    return max(16, triton.next_power_of_2(d))


def default_tile_configs(
    head_dim_s: int, head_dim_t: int, dtype: torch.dtype = torch.bfloat16
) -> tuple[TileConfig, TileConfig]:
    """``(forward, backward)`` tiles picked from the padded head dims and the input dtype.

    Sized so that ptxas (sm_90) needs no register spills for the listed head dims; fp32
    inputs use IEEE (non tensor-core) dots and need much smaller tiles.  The interpreter gets
    32 x 32 tiles.
    """
    if _interpreted():
        small = TileConfig(block_m=32, block_n=32, num_warps=1, num_stages=1)
        return small, small
    d = max(_pad_dim(head_dim_s), _pad_dim(head_dim_t))
    if dtype == torch.float32:
        if d <= 64:
            return TileConfig(32, 32, 4), TileConfig(16, 32, 4)
        if d <= 128:
            return TileConfig(16, 32, 8), TileConfig(16, 32, 8)
        return TileConfig(16, 16, 4), TileConfig(16, 16, 4)
    if d <= 64:
        return TileConfig(128, 64, 8), TileConfig(64, 64, 8)
    if d <= 128:
        return TileConfig(128, 64, 8), TileConfig(32, 32, 4)
    return TileConfig(64, 64, 8), TileConfig(16, 32, 4)


def _check_inputs(
    a_s: torch.Tensor,
    b_s: torch.Tensor,
    a_t: torch.Tensor,
    b_t: torch.Tensor,
    mask: torch.Tensor | None,
) -> tuple[int, int, int, int, int, int, int]:
    """Shape/dtype/contiguity checks of the kernel operands; returns the dimensions."""
    for name, x in (("a_s", a_s), ("b_s", b_s), ("a_t", a_t), ("b_t", b_t)):
        if x.dim() != 4:
            raise ValueError(f"relation_kl triton: {name} must be 4-D, got {tuple(x.shape)}")
        if x.dtype not in _KERNEL_DTYPES:
            raise ValueError(f"relation_kl triton: {name} has unsupported dtype {x.dtype}")
        if x.dtype != a_s.dtype:
            raise ValueError(f"relation_kl triton: {name} dtype {x.dtype} != a_s {a_s.dtype}")
        if not x.is_contiguous():
            raise ValueError(f"relation_kl triton: {name} must be contiguous")
        if x.device != a_s.device:
            raise ValueError(f"relation_kl triton: {name} is on {x.device}, a_s on {a_s.device}")
    if a_s.device.type != "cuda" and not _interpreted():
        raise ValueError(
            "relation_kl triton: inputs must be CUDA tensors (or set TRITON_INTERPRET=1 "
            "before importing triton)"
        )
    batch, heads, n, d_s = a_s.shape
    d_t = a_t.shape[3]
    kv_s, kv_t = b_s.shape[1], b_t.shape[1]
    if tuple(a_t.shape[:3]) != (batch, heads, n):
        raise ValueError(f"relation_kl triton: a_t shape {tuple(a_t.shape)} vs a_s")
    if tuple(b_s.shape) != (batch, kv_s, n, d_s) or heads % kv_s:
        raise ValueError(f"relation_kl triton: b_s shape {tuple(b_s.shape)} vs a_s")
    if tuple(b_t.shape) != (batch, kv_t, n, d_t) or heads % kv_t:
        raise ValueError(f"relation_kl triton: b_t shape {tuple(b_t.shape)} vs a_t")
    if mask is not None and (
        mask.dtype != torch.int8
        or tuple(mask.shape) != (batch, n)
        or not mask.is_contiguous()
        or mask.device != a_s.device
    ):
        raise ValueError("relation_kl triton: mask must be a contiguous int8 [batch, seq] tensor")
    return batch, heads, n, kv_s, kv_t, d_s, d_t


def _common_launch_args(a_s, b_s, a_t, b_t, kv_s, kv_t):
    heads = a_s.shape[1]
    strides = []
    for x in (a_s, b_s, a_t, b_t):
        strides += [x.stride(0), x.stride(1), x.stride(2)]
    return strides, heads // kv_s, heads // kv_t


def _meta(a_s, d_s, d_t, causal, has_mask, config: TileConfig) -> dict:
    upcast = _interpreted() and a_s.dtype == torch.bfloat16
    return dict(
        DS=_pad_dim(d_s),
        DT=_pad_dim(d_t),
        BLOCK_M=config.block_m,
        BLOCK_N=config.block_n,
        CAUSAL=causal,
        HAS_MASK=has_mask,
        UPCAST=upcast,
        F32=upcast or a_s.dtype == torch.float32,
        num_warps=config.num_warps,
        num_stages=config.num_stages,
    )


def relation_kl_forward(
    a_s: torch.Tensor,
    b_s: torch.Tensor,
    a_t: torch.Tensor,
    b_t: torch.Tensor,
    mask: torch.Tensor | None,
    causal: bool,
    scale_s: float,
    scale_t: float,
    config: TileConfig,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Launch the forward kernel; returns fp32 ``(row_kl, lse_s, lse_t)``, each ``[B, H, n]``.

    ``mask`` is ``None`` or contiguous int8 ``[B, n]`` (nonzero for real tokens).
    """
    batch, heads, n, kv_s, kv_t, d_s, d_t = _check_inputs(a_s, b_s, a_t, b_t, mask)
    row_kl = torch.empty(batch, heads, n, dtype=torch.float32, device=a_s.device)
    lse_s = torch.empty_like(row_kl)
    lse_t = torch.empty_like(row_kl)
    strides, group_s, group_t = _common_launch_args(a_s, b_s, a_t, b_t, kv_s, kv_t)
    grid = (triton.cdiv(n, config.block_m), batch * heads)
    _relkl_fwd_kernel[grid](
        a_s, b_s, a_t, b_t, row_kl if mask is None else mask, row_kl, lse_s, lse_t,
        *strides,
        n, heads, group_s, group_t, d_s, d_t, float(scale_s), float(scale_t),
        **_meta(a_s, d_s, d_t, causal, mask is not None, config),
    )  # fmt: skip
    return row_kl, lse_s, lse_t


def _grad_dtype(x: torch.Tensor) -> torch.dtype:
    """Gradient buffer dtype: fp32 for bf16 under the interpreter, whose fp32 -> bf16 cast
    truncates instead of rounding to nearest; torch does the rounding there."""
    if _interpreted() and x.dtype == torch.bfloat16:
        return torch.float32
    return x.dtype


def _check_row_tensors(row_tensors: dict[str, torch.Tensor], batch: int, heads: int, n: int):
    for name, x in row_tensors.items():
        if x.dtype != torch.float32 or tuple(x.shape) != (batch, heads, n):
            raise ValueError(f"relation_kl triton: {name} must be fp32 [{batch}, {heads}, {n}]")
        if not x.is_contiguous():
            raise ValueError(f"relation_kl triton: {name} must be contiguous")


def relation_kl_backward_da(
    a_s: torch.Tensor,
    b_s: torch.Tensor,
    a_t: torch.Tensor,
    b_t: torch.Tensor,
    mask: torch.Tensor | None,
    lse_s: torch.Tensor,
    lse_t: torch.Tensor,
    grad_rows: torch.Tensor,
    causal: bool,
    scale_s: float,
    scale_t: float,
    config: TileConfig,
) -> torch.Tensor:
    """Launch the dA kernel: gradient of ``sum(row_kl * grad_rows)`` w.r.t. ``a_s``."""
    batch, heads, n, kv_s, kv_t, d_s, d_t = _check_inputs(a_s, b_s, a_t, b_t, mask)
    _check_row_tensors({"lse_s": lse_s, "lse_t": lse_t, "grad_rows": grad_rows}, batch, heads, n)
    grad_a = torch.empty(a_s.shape, dtype=_grad_dtype(a_s), device=a_s.device)
    strides, group_s, group_t = _common_launch_args(a_s, b_s, a_t, b_t, kv_s, kv_t)
    grid = (triton.cdiv(n, config.block_m), batch * heads)
    _relkl_bwd_da_kernel[grid](
        a_s, b_s, a_t, b_t, lse_s if mask is None else mask, lse_s, lse_t, grad_rows, grad_a,
        *strides,
        n, heads, group_s, group_t, d_s, d_t, float(scale_s), float(scale_t),
        **_meta(a_s, d_s, d_t, causal, mask is not None, config),
    )  # fmt: skip
    return grad_a.to(a_s.dtype)


def relation_kl_backward_db(
    a_s: torch.Tensor,
    b_s: torch.Tensor,
    a_t: torch.Tensor,
    b_t: torch.Tensor,
    mask: torch.Tensor | None,
    lse_s: torch.Tensor,
    lse_t: torch.Tensor,
    grad_rows: torch.Tensor,
    causal: bool,
    scale_s: float,
    scale_t: float,
    config: TileConfig,
) -> torch.Tensor:
    """Launch the dB kernel: gradient of ``sum(row_kl * grad_rows)`` w.r.t. ``b_s``."""
    batch, heads, n, kv_s, kv_t, d_s, d_t = _check_inputs(a_s, b_s, a_t, b_t, mask)
    _check_row_tensors({"lse_s": lse_s, "lse_t": lse_t, "grad_rows": grad_rows}, batch, heads, n)
    grad_b = torch.empty(b_s.shape, dtype=_grad_dtype(b_s), device=b_s.device)
    strides, group_s, group_t = _common_launch_args(a_s, b_s, a_t, b_t, kv_s, kv_t)
    grid = (triton.cdiv(n, config.block_n), batch * kv_s)
    _relkl_bwd_db_kernel[grid](
        a_s, b_s, a_t, b_t, lse_s if mask is None else mask, lse_s, lse_t, grad_rows, grad_b,
        *strides,
        n, heads, kv_s, group_s, group_t, d_s, d_t, float(scale_s), float(scale_t),
        **_meta(a_s, d_s, d_t, causal, mask is not None, config),
    )  # fmt: skip
    return grad_b.to(b_s.dtype)


# --------------------------------------------------------------------------------------------
# Autograd and public entry point
# --------------------------------------------------------------------------------------------


class _RelationKLTriton(torch.autograd.Function):
    """Per-row KL ``[B, H, n]`` fp32; gradients for ``a_s`` and ``b_s`` only."""

    @staticmethod
    def forward(ctx, a_s, b_s, a_t, b_t, mask, causal, scale_s, scale_t, fwd_tiles, bwd_tiles):
        row_kl, lse_s, lse_t = relation_kl_forward(
            a_s, b_s, a_t, b_t, mask, causal, scale_s, scale_t, fwd_tiles
        )
        ctx.save_for_backward(a_s, b_s, a_t, b_t, lse_s, lse_t)
        ctx.mask = mask
        ctx.launch = (causal, scale_s, scale_t, bwd_tiles)
        return row_kl

    @staticmethod
    def backward(ctx, grad_rows):
        a_s, b_s, a_t, b_t, lse_s, lse_t = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        grad_a = grad_b = None
        if need_a or need_b:
            grad_rows = grad_rows.to(torch.float32).contiguous()
            args = (a_s, b_s, a_t, b_t, ctx.mask, lse_s, lse_t, grad_rows, *ctx.launch)
            if need_a:
                grad_a = relation_kl_backward_da(*args)
            if need_b:
                grad_b = relation_kl_backward_db(*args)
        return grad_a, grad_b, None, None, None, None, None, None, None, None


def relation_kl_triton(
    a_s: torch.Tensor,
    b_s: torch.Tensor,
    a_t: torch.Tensor,
    b_t: torch.Tensor,
    mask: torch.Tensor | None = None,
    causal: bool = True,
    scale_s: float | None = None,
    scale_t: float | None = None,
    reduction: str = "mean",
    *,
    tile_config: TileConfig | tuple[TileConfig, TileConfig] | None = None,
) -> torch.Tensor:
    """Relation KL with the Triton kernels; same arguments and result as ``relation_kl``.

    Differentiable in ``a_s`` and ``b_s`` (the teacher is a constant).  fp16/bf16/fp32 inputs
    compute in fp32; fp64 inputs are computed in fp32 and the result is cast back to fp64.
    ``tile_config`` (one :class:`TileConfig` for all kernels, or a ``(forward, backward)``
    pair) overrides :func:`default_tile_configs`.
    """
    args: RelationKLArgs = prepare_relation_kl_args(
        a_s, b_s, a_t, b_t, mask, causal, scale_s, scale_t, reduction
    )
    if args.input_dtype == torch.float64:
        a_s, b_s, a_t, b_t = (x.to(torch.float32) for x in (a_s, b_s, a_t, b_t))
    if tile_config is None:
        tile_config = default_tile_configs(args.head_dim_s, args.head_dim_t, a_s.dtype)
    elif isinstance(tile_config, TileConfig):
        tile_config = (tile_config, tile_config)
    mask_i8 = None if args.mask is None else args.mask.to(torch.int8).contiguous()
    row_kl = _RelationKLTriton.apply(
        a_s.contiguous(),
        b_s.contiguous(),
        a_t.detach().contiguous(),
        b_t.detach().contiguous(),
        mask_i8,
        args.causal,
        args.scale_s,
        args.scale_t,
        *tile_config,
    )
    return reduce_row_kl(row_kl.to(args.compute_dtype), args)
