"""Capture post-RoPE queries and keys of every attention layer during a forward pass.

transformers routes attention through its ``AttentionInterface`` registry, called with the
queries and keys *after* RoPE (and after any q/k norm) and before GQA repetition. This module
registers one more implementation, ``longred_capture``, that hands ``(layer_idx, query, key)`` to
the active sink and then runs transformers' own SDPA attention, so the forward's output is that of
the ``sdpa`` implementation. Only the context manager switches a model to it, and restores the
previous implementation on exit. No modeling code is copied or patched, and no n x n attention
map is materialised.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
from transformers import AttentionInterface, PreTrainedModel
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

from longred_bench.errors import UserError

CAPTURE_IMPL = "longred_capture"
QKSink = Callable[[int, torch.Tensor, torch.Tensor, float], None]
QKVSink = Callable[[int, torch.Tensor, torch.Tensor, torch.Tensor, float], None]
_SINKS: list[tuple[QKSink | QKVSink, bool]] = []


def _capturing_attention(
    module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, *args, **kwargs
):
    if _SINKS:
        layer_idx = getattr(module, "layer_idx", None)
        if layer_idx is None:
            raise UserError(
                f"{type(module).__name__} has no layer_idx: captured q/k cannot be given a layer"
            )
        scaling = kwargs.get("scaling")
        scale = float(scaling) if scaling is not None else query.shape[-1] ** -0.5
        sink, with_value = _SINKS[-1]
        if with_value:
            sink(int(layer_idx), query, key, args[0], scale)
        else:
            sink(int(layer_idx), query, key, scale)
    return sdpa_attention_forward(module, query, key, *args, **kwargs)


AttentionInterface.register(CAPTURE_IMPL, _capturing_attention)
ALL_MASK_ATTENTION_FUNCTIONS.register(CAPTURE_IMPL, sdpa_mask)


@contextmanager
def capture_qk(model: PreTrainedModel, sink: QKSink) -> Iterator[None]:
    """Within the block, every attention layer of ``model`` calls ``sink(layer, q, k, scale)``
    with q ``[batch, query_heads, seq, head_dim]`` and k ``[batch, kv_heads, seq, head_dim]``,
    both post-RoPE, and the softmax scale the layer uses (``head_dim ** -0.5`` unless the
    model says otherwise). The model's attention implementation is restored afterwards."""
    with _capturing(model, sink, with_value=False):
        yield


@contextmanager
def capture_qkv(model: PreTrainedModel, sink: QKVSink) -> Iterator[None]:
    """As :func:`capture_qk`, with the values too: ``sink(layer, q, k, v, scale)``, v
    ``[batch, kv_heads, seq, head_dim]`` (values carry no RoPE)."""
    with _capturing(model, sink, with_value=True):
        yield


@contextmanager
def _capturing(
    model: PreTrainedModel, sink: QKSink | QKVSink, *, with_value: bool
) -> Iterator[None]:
    previous = model.config._attn_implementation
    model.set_attn_implementation(CAPTURE_IMPL)
    _SINKS.append((sink, with_value))
    try:
        yield
    finally:
        _SINKS.pop()
        model.set_attn_implementation(previous)
