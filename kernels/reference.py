"""Naive relation KL: materialise every score, masked ``log_softmax``, plain autograd.

This is the reference the tests and benchmarks compare against.  It repeats GQA kv heads and
holds several ``[batch, query_heads, seq, seq]`` tensors, so its memory is quadratic in ``seq``;
use it for checking, not for long sequences.  Gradients flow to all four inputs, the teacher
included.
"""

from __future__ import annotations

import torch

from ._common import MASK_VALUE, block_validity, prepare_relation_kl_args, reduce_row_kl


def relation_kl_naive(
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
) -> torch.Tensor:
    """KL(P_t || P_s) with ``P = softmax(scale * A B^T)`` over valid columns, fully materialised.

    ``a_*``: ``[B, H, n, d_*]``; ``b_*``: ``[B, Hkv_*, n, d_*]``; ``mask``: ``[B, n]`` or None.
    Returns ``[B, H, n]`` for ``reduction="none"`` (0 on masked rows), else a scalar; the dtype
    is fp64 for fp64 inputs and fp32 otherwise.
    """
    args = prepare_relation_kl_args(a_s, b_s, a_t, b_t, mask, causal, scale_s, scale_t, reduction)
    n = args.seq
    entries, rows = block_validity(args, 0, n, n, a_s.device)

    def log_probs(a: torch.Tensor, b: torch.Tensor, scale: float) -> torch.Tensor:
        a = a.to(args.compute_dtype)
        b = b.to(args.compute_dtype).repeat_interleave(args.query_heads // b.shape[1], dim=1)
        scores = scale * (a @ b.transpose(-1, -2))
        if entries is not None:
            scores = scores.masked_fill(~entries, MASK_VALUE)
        return torch.log_softmax(scores, dim=-1)

    logp_s = log_probs(a_s, b_s, args.scale_s)
    logp_t = log_probs(a_t, b_t, args.scale_t)
    terms = logp_t.exp() * (logp_t - logp_s)
    if entries is not None:
        terms = terms.masked_fill(~entries, 0.0)
    row_kl = terms.sum(dim=-1)
    if rows is not None:
        row_kl = row_kl.masked_fill(~rows, 0.0)
    return reduce_row_kl(row_kl, args)
