"""Triton relation KL: one-pass forward, deterministic two-kernel backward.

Scores ``S = scale * A B^T`` are never stored.  The forward kernel runs one program per
(row tile, batch x query head) and sweeps once over the column tiles (only up to the diagonal
when causal), carrying for every row the online log-sum-exp state of student and teacher
(running max ``m`` and rescaled sum ``l``) and ``acc = sum_j exp(S_t - m_t) (S_t - S_s)``,
rescaled whenever ``m_t`` grows.  At the end ``KL = acc / l_t - LSE_t + LSE_s``; it writes the
per-row KL and the two fp32 ``LSE`` vectors (``O(n)`` memory).  Column tiles no mask touches
take a shorter path (see ``_fwd_step``); causal row tiles are launched longest first, which
shortens the tail of the last wave.  Scales must be positive (the row max is taken before
scaling).

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

from ._common import RelationKLArgs, prepare_relation_kl_args, reduce_row_kl
from .triton_kernels import _relkl_bwd_da_kernel, _relkl_bwd_db_kernel, _relkl_fwd_kernel

_KERNEL_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


# --------------------------------------------------------------------------------------------
# Launch wrappers
# --------------------------------------------------------------------------------------------


def _interpreted() -> bool:
    """True when the kernels run in Triton's CPU interpreter."""
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

    Sized so that ptxas (sm_90) needs no register spills for head dims 64 and 128: none under
    Triton 3.9, and 8-32 bytes in three dB-kernel variants at d = 128 under Triton 3.6
    (``nox -s compile_kernels``, ``reports/kernels/compile_sm90.csv``).  fp32 inputs use IEEE
    (non tensor-core) dots and need much smaller tiles.  The interpreter gets 32 x 32 tiles.
    """
    if _interpreted():
        small = TileConfig(block_m=32, block_n=32, num_warps=1, num_stages=1)
        return small, small
    d = max(_pad_dim(head_dim_s), _pad_dim(head_dim_t))
    if dtype == torch.float32:
        if d <= 64:
            return TileConfig(16, 32, 4), TileConfig(16, 32, 4)
        if d <= 128:
            return TileConfig(16, 32, 8), TileConfig(16, 32, 8)
        return TileConfig(16, 16, 4), TileConfig(16, 16, 4)
    if d <= 64:
        return TileConfig(128, 64, 8), TileConfig(64, 64, 8)
    if d <= 128:  # 64 x 64, 4 warps: the fastest of 18 forward tiles at n=8K on an H200
        return TileConfig(64, 64, 4), TileConfig(32, 32, 4)
    return TileConfig(64, 64, 8), TileConfig(16, 32, 4)


@dataclass(frozen=True)
class KernelLaunch:
    """One kernel launch, built but not run: the ``@triton.jit`` kernel, its grid, positional
    arguments and compile-time options (constexprs, ``num_warps``, ``num_stages``).

    The launch wrappers run it; :mod:`.triton_compile` compiles the same launch for a GPU
    target without running it.
    """

    kernel: object
    grid: tuple[int, int]
    args: tuple
    meta: dict

    def __call__(self) -> None:
        self.kernel[self.grid](*self.args, **self.meta)


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


def _check_device(x: torch.Tensor) -> None:
    """Running a kernel needs CUDA tensors, or CPU tensors under the interpreter."""
    if x.device.type != "cuda" and not _interpreted():
        raise ValueError(
            "relation_kl triton: inputs must be CUDA tensors (or set TRITON_INTERPRET=1 "
            "before importing triton)"
        )


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


def forward_launch(
    a_s: torch.Tensor,
    b_s: torch.Tensor,
    a_t: torch.Tensor,
    b_t: torch.Tensor,
    mask: torch.Tensor | None,
    causal: bool,
    scale_s: float,
    scale_t: float,
    config: TileConfig,
) -> tuple[KernelLaunch, tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """The forward launch and its fp32 outputs ``(row_kl, lse_s, lse_t)``, each ``[B, H, n]``.

    ``mask`` is ``None`` or contiguous int8 ``[B, n]`` (nonzero for real tokens).
    """
    batch, heads, n, kv_s, kv_t, d_s, d_t = _check_inputs(a_s, b_s, a_t, b_t, mask)
    if not (scale_s > 0 and scale_t > 0):
        raise ValueError(
            f"relation_kl triton: scale_s and scale_t must be positive, got {scale_s}, {scale_t}"
        )
    row_kl = torch.empty(batch, heads, n, dtype=torch.float32, device=a_s.device)
    lse_s = torch.empty_like(row_kl)
    lse_t = torch.empty_like(row_kl)
    strides, group_s, group_t = _common_launch_args(a_s, b_s, a_t, b_t, kv_s, kv_t)
    args = (
        a_s, b_s, a_t, b_t, row_kl if mask is None else mask, row_kl, lse_s, lse_t,
        *strides,
        n, heads, group_s, group_t, d_s, d_t, float(scale_s), float(scale_t),
    )  # fmt: skip
    meta = _meta(a_s, d_s, d_t, causal, mask is not None, config)
    meta["EVEN_D"] = meta["DS"] == d_s and meta["DT"] == d_t  # no head-dim padding to mask
    launch = KernelLaunch(
        _relkl_fwd_kernel, (triton.cdiv(n, config.block_m), batch * heads), args, meta
    )
    return launch, (row_kl, lse_s, lse_t)


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
    launch, outputs = forward_launch(a_s, b_s, a_t, b_t, mask, causal, scale_s, scale_t, config)
    _check_device(a_s)
    launch()
    return outputs


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


def backward_launch(
    wrt: str,
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
) -> tuple[KernelLaunch, torch.Tensor]:
    """The dA (``wrt="a"``, row tiles) or dB (``wrt="b"``, column tiles per student kv head)
    launch, and the gradient buffer it fills (``a_s``- or ``b_s``-shaped)."""
    batch, heads, n, kv_s, kv_t, d_s, d_t = _check_inputs(a_s, b_s, a_t, b_t, mask)
    _check_row_tensors({"lse_s": lse_s, "lse_t": lse_t, "grad_rows": grad_rows}, batch, heads, n)
    strides, group_s, group_t = _common_launch_args(a_s, b_s, a_t, b_t, kv_s, kv_t)
    first = (a_s, b_s, a_t, b_t, lse_s if mask is None else mask, lse_s, lse_t, grad_rows)
    sizes = (n, heads) if wrt == "a" else (n, heads, kv_s)
    tail = (group_s, group_t, d_s, d_t, float(scale_s), float(scale_t))
    meta = _meta(a_s, d_s, d_t, causal, mask is not None, config)
    if wrt == "a":
        grad = torch.empty(a_s.shape, dtype=_grad_dtype(a_s), device=a_s.device)
        kernel, grid = _relkl_bwd_da_kernel, (triton.cdiv(n, config.block_m), batch * heads)
    elif wrt == "b":
        grad = torch.empty(b_s.shape, dtype=_grad_dtype(b_s), device=b_s.device)
        kernel, grid = _relkl_bwd_db_kernel, (triton.cdiv(n, config.block_n), batch * kv_s)
    else:
        raise ValueError(f"relation_kl triton: wrt must be 'a' or 'b', got {wrt!r}")
    args = (*first, grad, *strides, *sizes, *tail)
    return KernelLaunch(kernel, grid, args, meta), grad


def relation_kl_backward(
    wrt: str,
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
    """Launch the dA (``wrt="a"``) or dB (``wrt="b"``) kernel: the gradient of
    ``sum(row_kl * grad_rows)`` with respect to ``a_s`` or ``b_s``."""
    launch, grad = backward_launch(
        wrt, a_s, b_s, a_t, b_t, mask, lse_s, lse_t, grad_rows, causal, scale_s, scale_t, config
    )
    _check_device(a_s)
    launch()
    return grad.to(a_s.dtype)


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
                grad_a = relation_kl_backward("a", *args)
            if need_b:
                grad_b = relation_kl_backward("b", *args)
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
    same_s, same_t = b_s is a_s, b_t is a_t
    if args.input_dtype == torch.float64:
        a_s, b_s, a_t, b_t = (x.to(torch.float32) for x in (a_s, b_s, a_t, b_t))
    if tile_config is None:
        tile_config = default_tile_configs(args.head_dim_s, args.head_dim_t, a_s.dtype)
    elif isinstance(tile_config, TileConfig):
        tile_config = (tile_config, tile_config)
    mask_i8 = None if args.mask is None else args.mask.to(torch.int8).contiguous()
    # a self-relation (b is a, LinearARD's q/k/v) makes one contiguous copy, not two: each
    # copy is saved for the backward pass (a 1B model's q at 32K tokens: 134 MB a layer)
    a_s, a_t = a_s.contiguous(), a_t.detach().contiguous()
    b_s = a_s if same_s else b_s.contiguous()
    b_t = a_t if same_t else b_t.detach().contiguous()
    row_kl = _RelationKLTriton.apply(
        a_s,
        b_s,
        a_t,
        b_t,
        mask_i8,
        args.causal,
        args.scale_s,
        args.scale_t,
        *tile_config,
    )
    return reduce_row_kl(row_kl.to(args.compute_dtype), args)
