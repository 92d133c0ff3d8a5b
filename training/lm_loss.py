"""The language-model loss of every recipe: next-token cross-entropy of a causal LM on a batch.

``lm_loss`` (config key) picks how it is computed:

- ``plain``: the model's logits ``[rows, tokens, vocab]``, then
  :func:`~longred_bench.training.objectives.causal_lm_loss`;
- ``chunked`` / ``liger``: without whole logits. For the call, the model's output projection
  (``get_output_embeddings()``) computes
  :func:`~longred_bench.kernels.linear_ce.linear_cross_entropy` of its input (the final hidden
  states) against the shifted targets instead of the logits, and returns an empty tensor in their
  place. The model's own forward runs unchanged, so wrappers (DDP, FSDP2) see a whole call and
  the projection's weight is the one they gathered;
- ``auto``: ``plain`` on CPU (the runs cached so far), on CUDA ``liger`` where Liger-Kernel is
  installed, else ``chunked``.

All forms give the mean over the counted predictions (both tokens real); they agree to float
rounding (``tests/training/test_lm_loss.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from longred_bench.errors import UserError
from longred_bench.kernels.linear_ce import IGNORE_INDEX, liger_available, linear_cross_entropy
from longred_bench.training.config import LM_LOSSES
from longred_bench.training.objectives import causal_lm_loss


def resolve_lm_loss(name: str, device: torch.device | str) -> str:
    """What ``lm_loss: name`` means on ``device`` (see the module docstring)."""
    if name not in LM_LOSSES:
        raise UserError(f"config lm_loss={name!r} is not one of {', '.join(LM_LOSSES)}")
    if name != "auto":
        return name
    if torch.device(device).type != "cuda":
        return "plain"
    return "liger" if liger_available() else "chunked"


def shifted_targets(ids: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """``[B, T]`` targets of each position: the next token where both are real (``mask``),
    else :data:`IGNORE_INDEX` (always at the last position)."""
    target = torch.full_like(ids, IGNORE_INDEX)
    target[:, :-1] = ids[:, 1:]
    if mask is not None:
        counted = mask[:, 1:].bool() & mask[:, :-1].bool()
        target[:, :-1] = torch.where(counted, target[:, :-1], IGNORE_INDEX)
    return target


def output_projection(model: torch.nn.Module) -> torch.nn.Module:
    """The vocabulary projection of ``model`` (under a DDP wrapper or a LoRA model too)."""
    inner = getattr(model, "module", model)
    head = inner.get_output_embeddings()
    config = getattr(inner, "config", None)
    if getattr(head, "bias", None) is not None or getattr(config, "final_logit_softcapping", None):
        raise UserError(
            f"lm_loss chunked/liger needs logits = hidden @ W^T; {type(inner).__name__}'s head "
            "adds a bias or a soft cap: use lm_loss=plain"
        )
    return head


@contextmanager
def _head_computes_loss(model: torch.nn.Module, target: torch.Tensor, impl: str) -> Iterator[dict]:
    head = output_projection(model)
    box: dict[str, Any] = {}

    def forward(hidden: torch.Tensor) -> torch.Tensor:
        if hidden.shape[:2] != target.shape:
            raise RuntimeError(
                f"lm_loss: the output projection saw hidden states {tuple(hidden.shape)} for "
                f"targets {tuple(target.shape)} (logits_to_keep?)"
            )
        flat = hidden.reshape(-1, hidden.shape[-1])
        box["loss"] = linear_cross_entropy(flat, head.weight, target.reshape(-1), impl=impl)
        return hidden.new_empty(*hidden.shape[:2], 0)

    head.forward = forward
    try:
        yield box
    finally:
        del head.forward


def lm_loss(
    model: torch.nn.Module,
    ids: torch.Tensor,
    mask: torch.Tensor | None,
    *,
    impl: str,
    **kwargs: Any,
) -> torch.Tensor:
    """Mean next-token CE of ``model`` on ``ids [B, T]`` by ``impl`` (a resolved ``lm_loss``:
    ``plain``, ``chunked`` or ``liger``). ``mask [B, T]`` (True: real token) is passed as the
    attention mask; None: every token real, no mask passed. ``kwargs`` go to the model
    (``position_ids``)."""
    if mask is not None:
        kwargs["attention_mask"] = mask
    if impl == "plain":
        logits = model(ids, **kwargs).logits
        return causal_lm_loss(logits, ids, torch.ones_like(ids, dtype=torch.bool) if mask is None
                              else mask)  # fmt: skip
    with _head_computes_loss(model, shifted_targets(ids, mask), impl) as box:
        model(ids, **kwargs)
    return box["loss"]
