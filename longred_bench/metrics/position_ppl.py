"""Per-token negative log-likelihood and its sums by position bucket (long-document perplexity).

Pure tensor functions. A window of ``seq`` tokens gives ``seq - 1`` predictions; the prediction
of token ``p`` (from tokens ``< p``) sits at position ``p``, so position 0 never holds one. Bucket
``k`` of size ``B`` covers positions ``[k * B, (k + 1) * B)``; the last bucket ends at ``seq``
(it is shorter when ``seq`` is not a multiple of ``B``). Sums are accumulated in fp64 so that
many windows can be added up before the mean is taken; a bucket without valid tokens has sum 0
and count 0, and its mean NLL and perplexity are NaN.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

_CHUNK = 1024  # positions per fp32 log-softmax block, to bound the upcast copy of the logits


def token_nll(logits: torch.Tensor, labels: torch.Tensor, ignore_index: int = -100) -> torch.Tensor:
    """Negative log-likelihood of ``labels`` under ``logits``, position by position, in fp32.

    Shapes: ``logits`` ``[batch, seq, vocab]`` (any float dtype; upcast to fp32 in blocks of
    positions), ``labels`` ``[batch, seq]`` (int). ``logits[:, t]`` scores ``labels[:, t]``;
    returns ``[batch, seq]`` fp32, 0 where ``labels == ignore_index``.
    """
    if logits.shape[:-1] != labels.shape:
        raise ValueError(f"logits {tuple(logits.shape)} do not match labels {tuple(labels.shape)}")
    batch, seq = labels.shape
    out = torch.zeros(batch, seq, dtype=torch.float32, device=logits.device)
    for start in range(0, seq, _CHUNK):
        stop = min(start + _CHUNK, seq)
        block = logits[:, start:stop].float()
        out[:, start:stop] = F.cross_entropy(
            block.reshape(-1, block.shape[-1]),
            labels[:, start:stop].reshape(-1),
            ignore_index=ignore_index,
            reduction="none",
        ).view(batch, stop - start)
    return out


def next_token_nll(
    logits: torch.Tensor, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """NLL of each token given the ones before it, at the token's own position.

    Shapes: ``logits`` ``[batch, seq, vocab]`` (the model's output for ``input_ids``),
    ``input_ids`` ``[batch, seq]``, ``attention_mask`` ``[batch, seq]`` (1/True = real token) or
    None. Returns ``(nll, valid)``, both ``[batch, seq]``: ``nll[:, p]`` is
    ``-log p(input_ids[:, p] | input_ids[:, :p])`` in fp32 for ``p >= 1``; ``valid[:, p]`` is True
    where that prediction counts (``p >= 1`` and both token ``p`` and ``p - 1`` are real). Column
    0 and invalid entries of ``nll`` are 0.
    """
    if input_ids.dim() != 2 or logits.shape[:-1] != input_ids.shape:
        raise ValueError(
            f"logits {tuple(logits.shape)} do not match input_ids {tuple(input_ids.shape)} "
            "([batch, seq, vocab], [batch, seq])"
        )
    if attention_mask is not None and attention_mask.shape != input_ids.shape:
        raise ValueError(f"attention_mask {tuple(attention_mask.shape)} does not match "
                         f"input_ids {tuple(input_ids.shape)}")  # fmt: skip
    batch, seq = input_ids.shape
    nll = torch.zeros(batch, seq, dtype=torch.float32, device=logits.device)
    valid = torch.zeros(batch, seq, dtype=torch.bool, device=logits.device)
    if seq < 2:
        return nll, valid
    labels = input_ids[:, 1:]
    pair = torch.ones_like(labels, dtype=torch.bool)
    if attention_mask is not None:
        real = attention_mask.bool()
        pair = real[:, 1:] & real[:, :-1]
        labels = labels.masked_fill(~pair, -100)
    nll[:, 1:] = token_nll(logits[:, :-1], labels)
    valid[:, 1:] = pair
    return nll, valid


def bucket_nll(
    nll: torch.Tensor, mask: torch.Tensor | None, bucket_size: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sum and count of valid per-token NLLs in each position bucket.

    Shapes: ``nll`` ``[batch, seq]`` (float), ``mask`` ``[batch, seq]`` (True = counted) or None
    (every entry counted). Returns ``(sums, counts)``, both ``[ceil(seq / bucket_size)]``:
    ``sums`` fp64, ``counts`` int64. Bucket ``k`` covers positions ``[k * bucket_size,
    min((k + 1) * bucket_size, seq))``; a bucket with no counted entry has sum 0 and count 0.
    ``seq == 0`` gives empty tensors.
    """
    if bucket_size < 1:
        raise ValueError(f"bucket_size must be >= 1, got {bucket_size}")
    if nll.dim() != 2:
        raise ValueError(f"nll must be [batch, seq], got shape {tuple(nll.shape)}")
    batch, seq = nll.shape
    keep = (
        torch.ones_like(nll, dtype=torch.bool)
        if mask is None
        else mask.to(device=nll.device, dtype=torch.bool)
    )
    if keep.shape != nll.shape:
        raise ValueError(f"mask {tuple(keep.shape)} does not match nll {tuple(nll.shape)}")
    num_buckets = math.ceil(seq / bucket_size)
    pad = num_buckets * bucket_size - seq
    values = torch.where(keep, nll.double(), 0.0)
    values = F.pad(values, (0, pad)).view(batch, num_buckets, bucket_size)
    counts = F.pad(keep.long(), (0, pad)).view(batch, num_buckets, bucket_size)
    return values.sum(dim=(0, 2)), counts.sum(dim=(0, 2))


def bucket_bounds(seq: int, bucket_size: int) -> list[tuple[int, int]]:
    """``(start, end)`` positions (end exclusive) of each bucket of a ``seq``-token window."""
    return [(s, min(s + bucket_size, seq)) for s in range(0, seq, bucket_size)]


def mean_nll(sums: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Mean NLL per bucket (``[K]`` fp64); NaN where ``counts`` is 0."""
    counts = counts.to(torch.float64)
    return torch.where(counts > 0, sums.double() / counts.clamp_min(1), float("nan"))


def perplexity(sums: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """``exp(mean NLL)`` per bucket (``[K]`` fp64); NaN where ``counts`` is 0."""
    return torch.exp(mean_nll(sums, counts))
