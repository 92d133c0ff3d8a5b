"""Pure tensor similarity functions shared by the drift metrics and the training objectives."""

from __future__ import annotations

import torch


def token_cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Cosine similarity of matching vectors along the last dim, computed in fp64.

    Shapes: ``a``, ``b`` are ``[..., dim]``; returns ``[...]`` (fp64). Written as
    ``<a,b> / sqrt(<a,a><b,b>)`` so that identical inputs give exactly 1 (``sqrt(x*x) == x``
    in IEEE arithmetic); a zero vector gives 0 (with a zero gradient, not NaN), a NaN element
    NaN (not 0: a failed forward is not the largest drift).
    """
    a64, b64 = a.double(), b.double()
    dot = (a64 * b64).sum(-1)
    product = (a64 * a64).sum(-1) * (b64 * b64).sum(-1)
    valid = (product > 0) | product.isnan()
    norm = torch.sqrt(torch.where(valid, product, 1.0))  # no sqrt at 0: its gradient is inf
    return torch.where(valid, dot / norm, 0.0)


def masked_mean_cosine(
    a: torch.Tensor, b: torch.Tensor, mask: torch.Tensor | None = None
) -> tuple[torch.Tensor, int]:
    """Sum of per-token cosines over valid tokens and their count, for streaming means.

    Shapes: ``a``, ``b`` are ``[batch, seq, dim]``; ``mask`` is ``[batch, seq]`` (True = real
    token) or None. Returns (fp64 scalar sum, count); all tokens masked gives (0, 0).
    """
    sums, counts = masked_cosine_sums(a, b, mask)
    return sums.sum(), int(counts.sum())


def masked_cosine_sums(
    a: torch.Tensor, b: torch.Tensor, mask: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-sequence sums of token cosines over valid tokens and their counts.

    Shapes: ``a``, ``b`` are ``[batch, seq, dim]``; ``mask`` is ``[batch, seq]`` (True = real
    token) or None. Returns (fp64 ``[batch]`` sums, int64 ``[batch]`` counts); a sequence with
    every token masked gives (0, 0).
    """
    cos = token_cosine(a, b)
    if mask is None:
        return cos.sum(-1), torch.full(cos.shape[:1], cos.shape[1], dtype=torch.long)
    if tuple(mask.shape) != tuple(cos.shape):  # a [seq] mask broadcast to every sequence
        raise ValueError(f"mask has shape {tuple(mask.shape)}, expected [batch, seq] = "
                         f"{list(cos.shape)}")  # fmt: skip
    keep = mask.bool()
    return torch.where(keep, cos, 0.0).sum(-1), keep.sum(-1)
