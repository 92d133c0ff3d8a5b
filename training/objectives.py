"""Training objectives as pure tensor functions (the distances are the drift metrics' own).

- :func:`causal_lm_loss`: next-token cross-entropy over real tokens.
- :func:`hidden_cosine_loss`: LongReD's distillation distance, ``sum_l (1 - mean cos(h_s, h_t))``
  over the given layers, with the cosine of :mod:`longred_bench.metrics.similarity`.
- :func:`relation_kl_loss`: LinearARD's distance, KL(teacher || student) of the row-softmaxed
  self-relations ``X X^T / sqrt(d)`` of q, k or v, through :func:`longred_bench.kernels.relation_kl`
  (linear memory), mean over query heads and valid rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from longred_bench.kernels import at_common_dtype, relation_kl
from longred_bench.metrics.similarity import masked_mean_cosine


def causal_lm_loss(logits: torch.Tensor, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy (fp32) of ``logits [B, T, V]`` against ``ids [B, T]``.

    Position ``t`` predicts ``ids[:, t + 1]``; a prediction counts when both tokens are real
    (``mask [B, T]`` True). No real pair gives 0.
    """
    target = ids[:, 1:]
    valid = mask[:, 1:] & mask[:, :-1]
    flat = logits[:, :-1].float().reshape(-1, logits.shape[-1])
    losses = F.cross_entropy(flat, target.reshape(-1), reduction="none").view_as(target)
    count = valid.sum()
    return (losses * valid).sum() / count.clamp_min(1)


def hidden_cosine_loss(
    student: Sequence[torch.Tensor], teacher: Sequence[torch.Tensor], mask: torch.Tensor | None
) -> torch.Tensor:
    """``sum_l (1 - mean_tokens cos(student[l], teacher[l]))``.

    ``student[l]``, ``teacher[l]`` are ``[B, T, D]`` hidden states of the same layer;
    ``mask [B, T]`` selects the tokens (None: all); a batch with every token masked has no
    tokens to compare and gives 0, as ``relation_kl_loss`` does. The cosine is computed in
    fp64 and the result returned in fp32.
    """
    total = torch.zeros((), dtype=torch.float64, device=student[0].device)
    for s, t in zip(student, teacher, strict=True):
        cos_sum, count = masked_mean_cosine(s, t.detach(), mask)
        # No token: 0, kept in the graph so that every process's backward still runs.
        total = total + ((1.0 - cos_sum / count) if count else 0.0 * cos_sum)
    return total.float()


def relation_kl_loss(
    student: torch.Tensor,
    teacher: torch.Tensor,
    mask: torch.Tensor | None,
    *,
    impl: str = "auto",
) -> torch.Tensor:
    """KL(P_teacher || P_student) of ``softmax(X X^T / sqrt(d))`` rows, causal, mean over heads
    and valid rows; ``student``/``teacher`` are ``[B, H, T, d]`` (q, k or v of one layer)."""
    student, teacher = at_common_dtype(student, teacher.detach())  # e.g. a bf16 teacher
    return relation_kl(
        student, student, teacher, teacher, mask=mask, causal=True,
        reduction="mean", impl=impl,
    )  # fmt: skip
