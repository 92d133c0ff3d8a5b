"""Linear-memory relation KL in plain PyTorch: row blocks and a custom autograd function.

The forward pass walks over blocks of query rows.  For each block it computes the student and
teacher scores against all columns (only the causal prefix when ``causal``), masks them, and
keeps per row and side only the max and the log-sum-exp of the shifted scores (four
``[B, H, n]`` tensors).  The backward pass recomputes the block scores from the saved inputs
and those statistics and forms ``G = P_s - P_t``, so memory is ``O(n * d)`` plus one block of
scores, never ``O(n^2)``.

GQA is handled by viewing the queries as ``[B, Hkv, group, n, d]``; a block of queries is
flattened to ``[B, Hkv, group * rows, d]`` and multiplied by the un-repeated keys
``[B, Hkv, n, d]``, so kv heads are never materialised per query head.

The teacher is treated as a constant: the backward pass returns ``None`` for ``a_t`` and
``b_t`` (use ``impl="naive"`` if a teacher gradient is ever wanted).  Gradients for the student
inputs are exact; a tensor passed as both ``a_s`` and ``b_s`` receives both contributions.
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

from ._common import (
    MASK_VALUE,
    RelationKLArgs,
    block_validity,
    prepare_relation_kl_args,
    reduce_row_kl,
)

SCORE_BUDGET_ELEMENTS = 1 << 23
"""Default block sizing aims at about this many elements per block score tensor (CUDA)."""
CPU_SCORE_BUDGET_ELEMENTS = 1 << 21
"""On CPU a quarter as many: blocks of 8 MiB (fp32) stay closer to the caches. Forward+backward,
causal, 2 threads, minimum of 2 after a warm-up: at LinearARD's tiny shape (B 32, 4 heads, n 256,
d 32) 64-row blocks took 78 ms against 197 ms for one 256-row block; at n 2,048 (B 1, 4 heads,
d 64) 256 rows 148 ms against 202 ms for 512; at n 8,192, 64 rows 2.31 s against 2.19 s for 256."""


def default_block_size(batch: int, query_heads: int, seq: int, *, cpu: bool = False) -> int:
    """Rows per block: about ``SCORE_BUDGET_ELEMENTS / (B * H * n)`` (``CPU_SCORE_BUDGET_ELEMENTS``
    on CPU), a power of 2 in [16, 512]."""
    budget = CPU_SCORE_BUDGET_ELEMENTS if cpu else SCORE_BUDGET_ELEMENTS
    target = budget // max(batch * query_heads * seq, 1)
    block = 16
    while block * 2 <= min(target, 512):
        block *= 2
    return block


def _block_scores(
    a: torch.Tensor,
    b: torch.Tensor,
    scale: float,
    rows: slice,
    col_end: int,
    entries: torch.Tensor | None,
) -> torch.Tensor:
    """Masked, scaled scores of one row block, ``[B, H, rows, col_end]``.

    ``a`` is ``[B, Hkv, group, n, d]``, ``b`` is ``[B, Hkv, n, d]`` (both in compute dtype).
    """
    bsz, hkv, group, _, d = a.shape
    a_blk = a[:, :, :, rows].reshape(bsz, hkv, -1, d)
    scores = torch.matmul(a_blk, b[:, :, :col_end].transpose(-1, -2))
    scores = scores.view(bsz, hkv * group, -1, col_end).mul_(scale)
    if entries is not None:
        scores.masked_fill_(~entries, MASK_VALUE)
    return scores


def _blocks(args: RelationKLArgs, block_size: int):
    """Yield ``(row slice, number of columns needed)`` for each row block."""
    for start in range(0, args.seq, block_size):
        end = min(start + block_size, args.seq)
        yield slice(start, end), (end if args.causal else args.seq)


class _RelationKLChunked(torch.autograd.Function):
    """Per-row KL ``[B, H, n]`` (0 on invalid rows); gradients for the student inputs only."""

    @staticmethod
    def forward(
        ctx,
        a_s: torch.Tensor,
        b_s: torch.Tensor,
        a_t: torch.Tensor,
        b_t: torch.Tensor,
        args: RelationKLArgs,
        block_size: int,
    ) -> torch.Tensor:
        cdt = args.compute_dtype
        bsz, heads, n = args.batch, args.query_heads, args.seq
        qa_s = a_s.to(cdt).view(bsz, args.kv_heads_s, args.group_s, n, args.head_dim_s)
        qa_t = a_t.to(cdt).view(bsz, args.kv_heads_t, args.group_t, n, args.head_dim_t)
        kb_s = b_s.to(cdt)
        kb_t = b_t.to(cdt)

        # Per row and side: the max m and l = log sum_j exp(S_ij - m), so log P = (S - m) - l.
        # Subtracting m before l (as log_softmax does) halves the fp32 error of S - lse.
        stats = torch.empty(4, bsz, heads, n, dtype=cdt, device=a_s.device)
        max_s, lse_s, max_t, lse_t = stats.unbind(0)
        row_kl = torch.empty(bsz, heads, n, dtype=cdt, device=a_s.device)
        for rows, col_end in _blocks(args, block_size):
            entries, valid_rows = block_validity(args, rows.start, rows.stop, col_end, a_s.device)
            logp_s = _block_scores(qa_s, kb_s, args.scale_s, rows, col_end, entries)
            logp_t = _block_scores(qa_t, kb_t, args.scale_t, rows, col_end, entries)
            for logp, row_max, row_lse in ((logp_s, max_s, lse_s), (logp_t, max_t, lse_t)):
                blk_max = logp.amax(dim=-1, keepdim=True)
                logp.sub_(blk_max)
                blk_lse = torch.logsumexp(logp, dim=-1, keepdim=True)
                logp.sub_(blk_lse)
                row_max[:, :, rows] = blk_max.squeeze(-1)
                row_lse[:, :, rows] = blk_lse.squeeze(-1)
            # KL_i = sum_j P_t (log P_t - log P_s); masked entries have P_t == 0 exactly and a
            # finite log difference, so they contribute exactly 0.
            logp_s.sub_(logp_t).neg_()
            blk_kl = logp_s.mul_(logp_t.exp_()).sum(dim=-1)
            if valid_rows is not None:
                blk_kl.masked_fill_(~valid_rows, 0.0)
            row_kl[:, :, rows] = blk_kl

        ctx.save_for_backward(a_s, b_s, a_t, b_t, stats)
        ctx.args = args
        ctx.block_size = block_size
        return row_kl

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_rows: torch.Tensor):
        a_s, b_s, a_t, b_t, stats = ctx.saved_tensors
        max_s, lse_s, max_t, lse_t = stats.unbind(0)
        args: RelationKLArgs = ctx.args
        need_a, need_b = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        if not (need_a or need_b):
            return None, None, None, None, None, None

        cdt = args.compute_dtype
        bsz, heads, n = args.batch, args.query_heads, args.seq
        hkv, group, d = args.kv_heads_s, args.group_s, args.head_dim_s
        qa_s = a_s.to(cdt).view(bsz, hkv, group, n, d)
        qa_t = a_t.to(cdt).view(bsz, args.kv_heads_t, args.group_t, n, args.head_dim_t)
        kb_s = b_s.to(cdt)
        kb_t = b_t.to(cdt)
        # Per-row weight: upstream gradient, zero on invalid rows so nothing leaks from them.
        weight = grad_rows.to(cdt)
        if args.mask is not None:
            weight = weight.masked_fill(~args.mask[:, None, :], 0.0)
        weight = weight * args.scale_s

        grad_a = torch.zeros_like(qa_s) if need_a else None
        grad_b = torch.zeros_like(kb_s) if need_b else None
        for rows, col_end in _blocks(args, block_size=ctx.block_size):
            entries, _ = block_validity(args, rows.start, rows.stop, col_end, a_s.device)
            p_s = _block_scores(qa_s, kb_s, args.scale_s, rows, col_end, entries)
            p_t = _block_scores(qa_t, kb_t, args.scale_t, rows, col_end, entries)
            for p, row_max, row_lse in ((p_s, max_s, lse_s), (p_t, max_t, lse_t)):
                p.sub_(row_max[:, :, rows].unsqueeze(-1))
                p.sub_(row_lse[:, :, rows].unsqueeze(-1)).exp_()
            # d KL_i / d S_s,ij = P_s,ij - P_t,ij; times row weight and scale_s for raw scores.
            g = p_s.sub_(p_t).mul_(weight[:, :, rows].unsqueeze(-1))
            del p_t
            g = g.view(bsz, hkv, group * (rows.stop - rows.start), col_end)
            if need_a:
                grad_a[:, :, :, rows] = torch.matmul(g, kb_s[:, :, :col_end]).view(
                    bsz, hkv, group, -1, d
                )
            if need_b:
                a_blk = qa_s[:, :, :, rows].reshape(bsz, hkv, -1, d)
                grad_b[:, :, :col_end] += torch.matmul(g.transpose(-1, -2), a_blk)

        if grad_a is not None:
            grad_a = grad_a.view(bsz, heads, n, d).to(a_s.dtype)
        if grad_b is not None:
            grad_b = grad_b.to(b_s.dtype)
        return grad_a, grad_b, None, None, None, None


def relation_kl_chunked(
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
    block_size: int | None = None,
) -> torch.Tensor:
    """KL(P_t || P_s) computed in row blocks with ``O(n * d + block * n)`` memory.

    Same arguments and result as :func:`longred_bench.kernels.relation_kl`, plus
    ``block_size`` (rows per block; ``None`` picks one from :func:`default_block_size`).
    Differentiable in ``a_s`` and ``b_s`` only: the teacher ``a_t``, ``b_t`` is a constant.
    """
    args = prepare_relation_kl_args(a_s, b_s, a_t, b_t, mask, causal, scale_s, scale_t, reduction)
    if block_size is None:
        cpu = a_s.device.type == "cpu"
        block_size = default_block_size(args.batch, args.query_heads, args.seq, cpu=cpu)
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"relation_kl: block_size must be a positive int, got {block_size!r}")
    row_kl = _RelationKLChunked.apply(
        a_s.contiguous(),
        b_s.contiguous(),
        a_t.detach().contiguous(),
        b_t.detach().contiguous(),
        args,
        block_size,
    )
    return reduce_row_kl(row_kl, args)
