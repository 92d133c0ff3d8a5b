"""Padding masks for the relation-KL tests (no Triton needed): ``None``, ``"left"`` or
``"right"`` padding of ``3 + 2b`` tokens in row ``b``, or ``"dead_row"`` (row 0 fully masked,
the others half)."""

from __future__ import annotations

import torch


def make_mask(kind: str | None, batch: int, seq: int, device: str = "cpu") -> torch.Tensor | None:
    """A ``[batch, seq]`` bool mask of ``kind`` on ``device`` (module docstring)."""
    if kind is None:
        return None
    mask = torch.ones(batch, seq, dtype=torch.bool)
    for b in range(batch):
        pad = min(seq - 1, 3 + 2 * b)
        if kind == "left":
            mask[b, :pad] = False
        elif kind == "right":
            mask[b, seq - pad :] = False
        elif kind == "dead_row":
            mask[b, : max(seq // 2, 1)] = False
    if kind == "dead_row":
        mask[0] = False
    return mask.to(device)
