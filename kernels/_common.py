"""Argument checking and shared pieces for every ``relation_kl`` implementation.

Each implementation (naive, chunked, Triton) calls :func:`prepare_relation_kl_args` first, so
shapes, dtypes, devices, the mask, the default scales and the reduction are validated and
normalised in one place, with one-line ``ValueError`` messages.  :func:`block_validity` builds
the validity of one block of (row, column) pairs and :func:`reduce_row_kl` turns per-row KL
values into the requested reduction, so the masking and reduction rules also live here once.

Conventions shared by all implementations:

* ``a`` is ``[batch, query_heads, seq, head_dim]`` and ``b`` is ``[batch, kv_heads, seq,
  head_dim]``; query head ``h`` uses kv head ``h // (query_heads // kv_heads)``.
* Row ``i`` is valid iff ``mask[i]``; column ``j`` is valid for row ``i`` iff ``mask[j]`` and,
  when causal, ``j <= i``.  A valid row therefore always has at least its own column.
* Invalid score entries are set to :data:`MASK_VALUE`, a large *finite* negative number, so no
  ``-inf - -inf`` can produce NaN; invalid rows get KL exactly 0 and zero gradient.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch

MASK_VALUE = -1.0e30
"""Score given to invalid entries: finite in fp32 and fp64, and ``exp`` of it underflows to 0."""

REDUCTIONS = ("none", "sum", "mean")
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


@dataclass(frozen=True)
class RelationKLArgs:
    """Validated, normalised arguments of one ``relation_kl`` call.

    ``mask`` is ``None`` or a bool ``[batch, seq]`` tensor on the inputs' device.
    ``compute_dtype`` is fp64 for fp64 inputs and fp32 otherwise; the output has that dtype.
    """

    batch: int
    query_heads: int
    seq: int
    kv_heads_s: int
    kv_heads_t: int
    head_dim_s: int
    head_dim_t: int
    scale_s: float
    scale_t: float
    mask: torch.Tensor | None
    causal: bool
    reduction: str
    input_dtype: torch.dtype
    compute_dtype: torch.dtype

    @property
    def group_s(self) -> int:
        """Query heads per student kv head."""
        return self.query_heads // self.kv_heads_s

    @property
    def group_t(self) -> int:
        """Query heads per teacher kv head."""
        return self.query_heads // self.kv_heads_t


def _check_tensor(name: str, x: object) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"relation_kl: {name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() != 4:
        raise ValueError(
            f"relation_kl: {name} must be 4-D [batch, heads, seq, head_dim], got shape "
            f"{tuple(x.shape)}"
        )
    if x.dtype not in SUPPORTED_DTYPES:
        raise ValueError(
            f"relation_kl: {name} has dtype {x.dtype}; expected float16, bfloat16, float32 "
            "or float64"
        )
    if min(x.shape) == 0:
        raise ValueError(f"relation_kl: {name} has an empty dimension, shape {tuple(x.shape)}")
    return x


def _resolve_scale(name: str, scale: object, head_dim: int) -> float:
    if scale is None:
        return head_dim**-0.5
    if isinstance(scale, torch.Tensor):
        if scale.numel() != 1:
            raise ValueError(f"relation_kl: {name} must be a number, got a tensor of {scale.shape}")
        scale = scale.item()
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise ValueError(f"relation_kl: {name} must be a number or None, got {scale!r}")
    if not math.isfinite(scale) or scale <= 0:  # a softmax temperature; the stats path needs > 0
        raise ValueError(f"relation_kl: {name} must be a finite number > 0, got {scale}")
    return float(scale)


def _check_mask(mask: object, batch: int, seq: int, device: torch.device) -> torch.Tensor | None:
    if mask is None:
        return None
    if not isinstance(mask, torch.Tensor):
        raise ValueError(f"relation_kl: mask must be a torch.Tensor or None, got {type(mask)}")
    if tuple(mask.shape) != (batch, seq):
        raise ValueError(
            f"relation_kl: mask must have shape [batch, seq] = {[batch, seq]}, got "
            f"{list(mask.shape)}"
        )
    if mask.device != device:
        raise ValueError(f"relation_kl: mask is on {mask.device} but the inputs are on {device}")
    if mask.dtype == torch.bool:
        return mask
    if mask.is_complex() or not bool(((mask == 0) | (mask == 1)).all()):
        raise ValueError("relation_kl: mask must be bool or hold only 0/1 values")
    return mask != 0


def prepare_relation_kl_args(
    a_s: torch.Tensor,
    b_s: torch.Tensor,
    a_t: torch.Tensor,
    b_t: torch.Tensor,
    mask: torch.Tensor | None = None,
    causal: bool = True,
    scale_s: float | None = None,
    scale_t: float | None = None,
    reduction: str = "mean",
) -> RelationKLArgs:
    """Validate and normalise the arguments shared by every ``relation_kl`` implementation.

    Shapes: ``a_s`` ``[B, H, n, d_s]``, ``b_s`` ``[B, Hkv_s, n, d_s]``, ``a_t`` ``[B, H, n,
    d_t]``, ``b_t`` ``[B, Hkv_t, n, d_t]``, ``mask`` ``[B, n]`` (bool or 0/1) or ``None``.
    Raises ``ValueError`` with a one-line message on any inconsistency.
    """
    tensors = {"a_s": a_s, "b_s": b_s, "a_t": a_t, "b_t": b_t}
    for name, x in tensors.items():
        _check_tensor(name, x)
    dtypes = {name: x.dtype for name, x in tensors.items()}
    if len(set(dtypes.values())) != 1:
        raise ValueError(f"relation_kl: all four inputs must share one dtype, got {dtypes}")
    devices = {name: str(x.device) for name, x in tensors.items()}
    if len(set(devices.values())) != 1:
        raise ValueError(f"relation_kl: all four inputs must be on one device, got {devices}")

    batch, heads, seq, d_s = a_s.shape
    if tuple(a_t.shape[:3]) != (batch, heads, seq):
        raise ValueError(
            f"relation_kl: a_t [batch, query_heads, seq] = {list(a_t.shape[:3])} must match "
            f"a_s {[batch, heads, seq]}"
        )
    d_t = a_t.shape[3]
    for side, a, b, d in (("s", a_s, b_s, d_s), ("t", a_t, b_t, d_t)):
        if b.shape[0] != batch or b.shape[2] != seq or b.shape[3] != d:
            raise ValueError(
                f"relation_kl: b_{side} shape {list(b.shape)} must be [batch={batch}, kv_heads, "
                f"seq={seq}, head_dim={d}] to match a_{side} {list(a.shape)}"
            )
        if heads % b.shape[1] != 0:
            raise ValueError(
                f"relation_kl: query_heads={heads} must be a multiple of b_{side} kv_heads="
                f"{b.shape[1]}"
            )

    if reduction not in REDUCTIONS:
        raise ValueError(
            f"relation_kl: reduction must be one of {', '.join(REDUCTIONS)}; got {reduction!r}"
        )
    if not isinstance(causal, bool):
        raise ValueError(f"relation_kl: causal must be a bool, got {causal!r}")

    dtype = a_s.dtype
    return RelationKLArgs(
        batch=batch,
        query_heads=heads,
        seq=seq,
        kv_heads_s=b_s.shape[1],
        kv_heads_t=b_t.shape[1],
        head_dim_s=d_s,
        head_dim_t=d_t,
        scale_s=_resolve_scale("scale_s", scale_s, d_s),
        scale_t=_resolve_scale("scale_t", scale_t, d_t),
        mask=_check_mask(mask, batch, seq, a_s.device),
        causal=causal,
        reduction=reduction,
        input_dtype=dtype,
        compute_dtype=torch.float64 if dtype == torch.float64 else torch.float32,
    )


def block_validity(
    args: RelationKLArgs, row_start: int, row_end: int, col_end: int, device: torch.device
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """Validity of rows ``[row_start, row_end)`` against columns ``[0, col_end)``.

    Returns ``(entries, rows)``: ``entries`` is bool ``[B or 1, 1, rows, col_end]`` (True where
    the score is used) and ``rows`` is bool ``[B, 1, rows]`` (True for valid rows); either is
    ``None`` when everything in it is valid.
    """
    entries = None
    rows = None
    if args.causal:
        r = torch.arange(row_start, row_end, device=device)
        c = torch.arange(col_end, device=device)
        entries = (c[None, :] <= r[:, None])[None, None]
    if args.mask is not None:
        cols = args.mask[:, None, None, :col_end]
        entries = cols if entries is None else entries & cols
        rows = args.mask[:, None, row_start:row_end]
    return entries, rows


def count_valid_rows(args: RelationKLArgs) -> int:
    """Number of valid (row, query head) pairs: the denominator of ``reduction="mean"``."""
    rows = args.batch * args.seq if args.mask is None else int(args.mask.sum())
    return rows * args.query_heads


def reduce_row_kl(row_kl: torch.Tensor, args: RelationKLArgs) -> torch.Tensor:
    """Apply ``args.reduction`` to per-row KL ``[B, H, n]`` (already 0 on invalid rows).

    ``"mean"`` divides the sum by the number of valid rows times query heads; with no valid row
    it returns 0, not NaN.
    """
    if args.reduction == "none":
        return row_kl
    total = row_kl.sum()
    if args.reduction == "sum":
        return total
    return total / max(count_valid_rows(args), 1)


def at_common_dtype(*tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """``tensors`` cast to their widest dtype (``torch.promote_types``), e.g. a bf16 teacher's q/k
    beside an fp32 student's: the relation KL takes four inputs of one dtype."""
    common = tensors[0].dtype
    for x in tensors[1:]:
        common = torch.promote_types(common, x.dtype)
    return tuple(x.to(common) for x in tensors)
