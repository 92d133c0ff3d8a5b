"""Positional salience (PSA) of a gold token: its rank, probability and reciprocal rank.

Pure tensor functions, fp32 inside. ``logits`` is ``[T, V]``: row ``t`` scores the vocabulary for
the query whose gold token is ``gold[t]`` (``[T]``, int64). With ``P = softmax(logits)``:

- rank:     ``1 + #{v : P(v) > P(gold)}`` (counted from 1; ties with the gold token do not
  push it down: only strictly greater probabilities count);
- salience: ``S = mean_t 1 / rank_t``, the mean reciprocal rank over the queries (PCD's S(L)).
  An empty set of queries (``T = 0``) has salience NaN.

:func:`answer_scores` scores one teacher-forced answer: every answer token's rank, probability
and reciprocal rank, and the sample's at its *gold step*, the first answer token that holds a
letter or digit (:func:`is_content_token`: SmolLM2 tokenizes ``" 3762156"`` as ``" "``, ``"3"``,
..., and the reference setup of PSA scores the ``"3"``).

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
    """Rank (from 1) of ``gold[t]`` in row ``t`` of ``logits`` ``[T, V]``; returns ``[T]`` int64.
    NaN logits are refused (a NaN compares below nothing, so a NaN row ranked its gold first)."""
    _check(logits, gold)
    scores = logits.float()
    if scores.isnan().any():
        raise ValueError("gold_rank: the logits hold NaN (a failed forward pass): no rank exists")
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


def is_content_token(text: str) -> bool:
    """True if a decoded token holds a letter or digit (not only punctuation or white space)."""
    return any(ch.isalnum() for ch in text)


def answer_scores(
    logits: torch.Tensor, gold: torch.Tensor, texts: list[str]
) -> tuple[dict[str, float | int], list[dict[str, object]]]:
    """The scores of one answer: ``logits`` ``[T, V]`` predicting its tokens ``gold`` ``[T]``
    (decoded as ``texts``). Returns the sample's scores (at the gold step, and means over every
    answer token) and one record per answer token."""
    if not texts or len(texts) != gold.shape[0]:  # a record per token, each with its text
        raise ValueError(f"answer_scores: {len(texts)} texts for {gold.shape[0]} answer tokens; "
                         "give one text per token")  # fmt: skip
    ranks = gold_rank(logits, gold)
    probs = gold_probability(logits, gold)
    rr = reciprocal_rank(ranks)
    step = next((i for i, text in enumerate(texts) if is_content_token(text)), 0)
    tokens = [
        {
            "answer_index": i,
            "token_id": int(gold[i]),
            "token": texts[i],
            "gold_step": i == step,
            "rank": int(ranks[i]),
            "probability": float(probs[i]),
            "reciprocal_rank": float(rr[i]),
        }
        for i in range(len(texts))
    ]
    summary = {
        "answer_tokens": len(texts),
        "gold_step": step,
        "rank": int(ranks[step]),
        "probability": float(probs[step]),
        "reciprocal_rank": float(rr[step]),
        "mean_reciprocal_rank_all": float(rr.mean()),
        "mean_rank_all": float(ranks.float().mean()),
        "mean_probability_all": float(probs.mean()),
    }
    return summary, tokens
