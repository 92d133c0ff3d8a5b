"""Forward-only relation KL from fused-attention statistics (CPU flash attention).

For the query/key relation ``P = softmax(s A B^T)`` the row KL needs no score matrix:
``log P_ij = s a_i . b_j - lse_i`` and ``sum_j P_t,ij = 1`` give

    KL_i = sum_j P_t,ij log P_t,ij - sum_j P_t,ij log P_s,ij
         = (s_t a_t,i . (P_t B_t)_i - lse_t,i) - (s_s a_s,i . (P_t B_s)_i - lse_s,i)

``P_t B_t`` and ``P_t B_s`` are attention outputs with the teacher's queries and keys and the
values ``B_t`` or ``B_s``; ``lse`` is the row log-sum-exp a flash-attention kernel keeps for its
backward pass.  One KL is therefore three fused attention calls (one of them, the teacher's
negative entropy, shareable by every student of the same teacher), each one streaming pass over
the scores in cache-sized tiles with ``O(n * d)`` memory, instead of two materialised score
blocks and about twenty elementwise passes over them (:mod:`.chunked`).  When the relation is
the student's own causal attention, its ``lse_s`` comes with that attention's output
(:func:`attention_with_lse`), and the KL costs two calls beyond the model's own.

The kernel is PyTorch's CPU flash attention (``aten::_scaled_dot_product_flash_attention_for_cpu``,
which returns the log-sum-exp); values must have the queries' head dim, so ``d_s == d_t``.  The
final combination runs in fp64.  In fp32 its row error is about that of the naive
reference in fp32 (0.8-1.3x in the tests); on SmolLM2-135M layers at n=2048 rows err by a few
1e-6 absolute (about 3x :mod:`.chunked`) and layer means by about 1e-7 relative.  Identical
teacher and student give exactly 0.  No autograd: use :mod:`.chunked` when a gradient is needed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ._common import (
    MASK_VALUE,
    RelationKLArgs,
    block_validity,
    prepare_relation_kl_args,
    reduce_row_kl,
)

_FLASH_CPU = "_scaled_dot_product_flash_attention_for_cpu"


@dataclass(frozen=True)
class TeacherTerms:
    """Teacher-side pieces of :func:`relation_kl_stats`, computed once per teacher layer.

    ``queries`` ``[B, H, n, d]`` and ``keys`` ``[B, H, n, d]`` (kv heads repeated to the query
    heads) in compute dtype; ``neg_entropy`` ``[B, H, n]`` fp64, ``sum_j P_t log P_t`` per row;
    ``scale`` the teacher's softmax scale; ``mask`` (bool ``[B, n]`` or None) and ``causal`` as
    they were computed, which :func:`relation_kl_stats` checks against its own call.
    """

    queries: torch.Tensor
    keys: torch.Tensor
    neg_entropy: torch.Tensor
    scale: float
    mask: torch.Tensor | None = None
    causal: bool = True


def _last_dim_dense(x: torch.Tensor) -> torch.Tensor:
    """``x`` itself where its last dimension is dense (stride 1), else a contiguous copy: the CPU
    flash-attention op reads the last dimension as if it were dense, whatever its stride."""
    return x if x.stride(-1) == 1 else x.contiguous()


def stats_supported(device: torch.device | str) -> bool:
    """Whether the fused-attention path can run on ``device`` (CPU, with the op available)."""
    return torch.device(device).type == "cpu" and hasattr(torch.ops.aten, _FLASH_CPU)


def _check_forward_only(args: RelationKLArgs, *tensors: torch.Tensor) -> None:
    """Reject what this path cannot do: gradients, other devices, different head dims."""
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        raise ValueError("relation_kl impl='stats' is forward-only; use 'chunked' for gradients")
    if not stats_supported(tensors[0].device):
        raise ValueError(f"relation_kl impl='stats' runs on CPU only, got {tensors[0].device}")
    if args.head_dim_s != args.head_dim_t:
        raise ValueError(
            f"relation_kl impl='stats' needs equal head dims, got {args.head_dim_s} (student) "
            f"and {args.head_dim_t} (teacher)"
        )


def _additive_mask(args: RelationKLArgs, device: torch.device) -> torch.Tensor | None:
    """``[B or 1, 1, n, n]`` additive mask (0 or ``MASK_VALUE``) when a padding mask is given;
    ``None`` when the kernel's own causal flag (or nothing) covers validity."""
    if args.mask is None:
        return None
    entries, _ = block_validity(args, 0, args.seq, args.seq, device)
    return torch.zeros(entries.shape, dtype=args.compute_dtype, device=device).masked_fill_(
        ~entries, MASK_VALUE
    )


def _repeat_heads(b: torch.Tensor, heads: int, dtype: torch.dtype) -> torch.Tensor:
    """Keys ``[B, Hkv, n, d]`` repeated to ``[B, heads, n, d]`` in ``dtype`` (kv head ``h //
    group`` for query head ``h``)."""
    b = b.to(dtype)
    return b if b.shape[1] == heads else b.repeat_interleave(heads // b.shape[1], dim=1)


def _attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    scale: float,
    args: RelationKLArgs,
    add_mask: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Flash attention ``softmax(scale q k^T) v`` and its row log-sum-exp ``[B, H, n]``."""
    causal = args.causal and add_mask is None
    flash = getattr(torch.ops.aten, _FLASH_CPU)
    q, k, v = (_last_dim_dense(x) for x in (q, k, v))
    out, lse = flash(q, k, v, 0.0, causal, attn_mask=add_mask, scale=scale)
    return out, lse


def _row_dot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Per-row dot product of ``[..., d]`` tensors in fp64, ``[...]``."""
    return torch.linalg.vecdot(a.double(), b.double())


def attention_with_lse(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Causal attention ``softmax(scale q k^T) v`` and its row log-sum-exp, one fused call.

    ``q`` ``[B, H, n, d]``; ``k`` and ``v`` ``[B, Hkv, n, d]`` with ``H`` a multiple of ``Hkv``
    (kv head ``h // (H / Hkv)`` serves query head ``h``). Returns the output ``[B, H, n, d]``,
    bit-identical to :func:`torch.nn.functional.scaled_dot_product_attention` with
    ``is_causal=True`` on CPU, and the log-sum-exp ``[B, H, n]`` (fp32), which is what
    :func:`relation_kl_stats` takes as ``student_lse``. CPU only, no autograd.
    """
    heads = q.shape[1]
    k = _repeat_heads(k, heads, q.dtype)
    v = _repeat_heads(v, heads, q.dtype)
    flash = getattr(torch.ops.aten, _FLASH_CPU)
    q, k, v = (_last_dim_dense(x) for x in (q, k, v))
    out, lse = flash(q, k, v, 0.0, True, scale=scale)
    return out, lse


def teacher_terms(
    a_t: torch.Tensor,
    b_t: torch.Tensor,
    *,
    mask: torch.Tensor | None = None,
    causal: bool = True,
    scale_t: float | None = None,
) -> TeacherTerms:
    """The teacher's queries, repeated keys and per-row negative entropy ``sum_j P log P``.

    Shapes as :func:`relation_kl_stats`; pass the result as its ``teacher`` to share it among
    several students of the same teacher (same ``mask`` and ``causal``).
    """
    args = prepare_relation_kl_args(a_t, b_t, a_t, b_t, mask, causal, scale_t, scale_t, "none")
    _check_forward_only(args, a_t, b_t)
    q = a_t.to(args.compute_dtype)
    k = _repeat_heads(b_t, args.query_heads, args.compute_dtype)
    kbar, lse = _attend(q, k, k, args.scale_t, args, _additive_mask(args, a_t.device))
    neg_entropy = args.scale_t * _row_dot(q, kbar) - lse.double()
    return TeacherTerms(q, k, neg_entropy, args.scale_t, args.mask, args.causal)


def _check_teacher(teacher: TeacherTerms, args: RelationKLArgs, scale_t: object) -> None:
    """``teacher`` (:func:`teacher_terms`) was computed for this call: same mask, causality and
    (where one is given) teacher scale; a ``ValueError`` naming the difference otherwise."""
    where = "relation_kl_stats: teacher terms were computed"
    if scale_t is not None and not math.isclose(teacher.scale, args.scale_t, rel_tol=1e-12):
        raise ValueError(f"{where} at scale_t {teacher.scale:g}, not {args.scale_t:g}: "
                         "compute them again")  # fmt: skip
    if teacher.causal != args.causal:
        raise ValueError(f"{where} with causal={teacher.causal}, not {args.causal}: "
                         "compute them again")  # fmt: skip
    had, has = teacher.mask, args.mask
    if (had is None) != (has is None) or (
        had is not None and has is not None and not torch.equal(had, has)  # other shapes: False
    ):
        raise ValueError(f"{where} with another mask: compute them with this call's mask")


def relation_kl_stats(
    a_s: torch.Tensor,
    b_s: torch.Tensor,
    a_t: torch.Tensor,
    b_t: torch.Tensor,
    *,
    mask: torch.Tensor | None = None,
    causal: bool = True,
    scale_s: float | None = None,
    scale_t: float | None = None,
    reduction: str = "mean",
    teacher: TeacherTerms | None = None,
    student_lse: torch.Tensor | None = None,
) -> torch.Tensor:
    """KL(P_t || P_s) from fused-attention statistics, forward only, CPU.

    Same arguments and result as :func:`longred_bench.kernels.relation_kl`, plus ``teacher``:
    :func:`teacher_terms` of ``(a_t, b_t)`` with the same ``mask``, ``causal`` and ``scale_t``
    (computed here when ``None``), and ``student_lse``: the row log-sum-exp ``[B, H, n]`` of
    the student's scores ``scale_s a_s b_s^T`` under the same mask, e.g. from the student's own
    attention call (:func:`attention_with_lse`), which saves one of the three fused calls.
    Raises ``ValueError`` when a gradient would be needed, off CPU, when the student's and
    teacher's head dims differ, when ``student_lse`` has the wrong shape, or when ``teacher``
    was computed with another mask, causality or (given here) ``scale_t``. Inputs whose last
    dimension is strided are copied dense first.
    """
    args = prepare_relation_kl_args(a_s, b_s, a_t, b_t, mask, causal, scale_s, scale_t, reduction)
    _check_forward_only(args, a_s, b_s, a_t, b_t)
    if teacher is None:
        teacher = teacher_terms(a_t, b_t, mask=args.mask, causal=causal, scale_t=args.scale_t)
    else:
        _check_teacher(teacher, args, scale_t)
    add_mask = _additive_mask(args, a_s.device)
    cdt = args.compute_dtype
    q_s = a_s.to(cdt)
    k_s = _repeat_heads(b_s, args.query_heads, cdt)
    # sum_j P_t,ij b_s,j: the teacher's attention with the student's keys as values
    kbar_ts, _ = _attend(teacher.queries, teacher.keys, k_s, teacher.scale, args, add_mask)
    if student_lse is None:
        _, student_lse = _attend(q_s, k_s, k_s, args.scale_s, args, add_mask)
    elif tuple(student_lse.shape) != tuple(q_s.shape[:3]):
        raise ValueError(
            f"student_lse has shape {tuple(student_lse.shape)}, expected {tuple(q_s.shape[:3])} "
            "(batch, query heads, seq)"
        )
    cross = args.scale_s * _row_dot(q_s, kbar_ts) - student_lse.double()
    row_kl = teacher.neg_entropy - cross
    if args.mask is not None:
        row_kl = row_kl.masked_fill(~args.mask[:, None, :], 0.0)
    return reduce_row_kl(row_kl.to(cdt), args)
