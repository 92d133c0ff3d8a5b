"""Positional salience (PSA) of a gold token: its rank, probability and reciprocal rank.

Pure tensor functions, fp32 inside. ``logits`` is ``[T, V]``: row ``t`` scores the vocabulary for
the query whose gold token is ``gold[t]`` (``[T]``, int64). With ``P = softmax(logits)``:

- rank:     ``1 + #{v : P(v) > P(gold)}`` (counted from 1; ties with the gold token do not
  push it down: only strictly greater probabilities count);
- salience: ``S = mean_t 1 / rank_t``, the mean reciprocal rank over the queries (PCD's S(L),
  docs: /work/shared/PCD.md). An empty set of queries (``T = 0``) has salience NaN.

Ranks are counted on the fp32 logits, which order tokens exactly as the probabilities do
(softmax is strictly increasing) without the underflow of tiny probabilities to the same 0.
"""

from __future__ import annotations

import torch


def _check(logits: torch.Tensor, gold: torch.Tensor) -> None:
    if logits.dim() != 2 or gold.dim() != 1 or gold.shape[0] != logits.shape[0]:
        raise ValueError(
            f"expected logits [T, V] and gold [T], got {tuple(logits.shape)} and "
            f"{tuple(gold.shape)}"
        )


def gold_rank(logits: torch.Tensor, gold: torch.Tensor) -> torch.Tensor:
    """Rank (from 1) of ``gold[t]`` in row ``t`` of ``logits`` ``[T, V]``; returns ``[T]`` int64."""
    _check(logits, gold)
    scores = logits.float()
    gold_score = scores.gather(1, gold.long().unsqueeze(1))  # [T, 1]
    return (scores > gold_score).sum(dim=1) + 1


def gold_probability(logits: torch.Tensor, gold: torch.Tensor) -> torch.Tensor:
    """``softmax(logits)[t, gold[t]]`` for ``logits`` ``[T, V]``; returns ``[T]`` fp32."""
    _check(logits, gold)
    logp = torch.log_softmax(logits.float(), dim=1)
    return logp.gather(1, gold.long().unsqueeze(1)).squeeze(1).exp()


def reciprocal_rank(ranks: torch.Tensor) -> torch.Tensor:
    """``1 / rank`` elementwise (``[T]`` -> ``[T]`` fp32); ranks start at 1."""
    return 1.0 / ranks.float()


def salience(ranks: torch.Tensor) -> torch.Tensor:
    """S = mean reciprocal rank of ``ranks`` ``[T]`` (a 0-dim fp32 tensor; NaN when ``T = 0``)."""
    if ranks.numel() == 0:
        return torch.tensor(float("nan"))
    return reciprocal_rank(ranks).mean()
