"""Capture post-RoPE queries and keys of every attention layer during a forward pass.

transformers routes attention through its ``AttentionInterface`` registry, called with the
queries and keys *after* RoPE (and after any q/k norm) and before GQA repetition. This module
registers one more implementation, ``longred_capture``, that hands ``(layer_idx, query, key)`` to
the active sink and then runs transformers' own SDPA attention, so the forward's output is that of
the ``sdpa`` implementation. Only the context manager switches a model to it, and restores the
previous implementation on exit. No modeling code is copied or patched, and no n x n attention
map is materialised.

:func:`capture_attention` goes one step further: its sink may compute the attention output
itself (to get statistics such as the row log-sum-exp from the same fused call), but only for
plain causal self-attention, where the result is defined without transformers' mask.
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
AttendSink = Callable[[int, torch.Tensor, torch.Tensor, torch.Tensor, float, bool], object]
_SINKS: list[tuple[QKSink | QKVSink | AttendSink, str]] = []
_UNPLAIN_KWARGS = ("softcap", "position_bias", "s_aux", "sinks", "cache")


def _plain_causal(
    module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, mask, kwargs: dict
) -> bool:
    """Whether this call is plain causal self-attention: no mask tensor (transformers passes
    none when causality alone is the mask), as many keys as queries, no dropout, and none of
    softcap, position bias, attention sinks or a paged cache."""
    is_causal = kwargs.get("is_causal")
    is_causal = getattr(module, "is_causal", True) if is_causal is None else is_causal
    return (
        mask is None
        and bool(is_causal)
        and query.shape[2] > 1
        and query.shape[2] == key.shape[2]
        and not kwargs.get("dropout", 0.0)
        and all(kwargs.get(name) is None for name in _UNPLAIN_KWARGS)
    )


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
        sink, mode = _SINKS[-1]
        value = args[0] if args else kwargs.get("value")
        if mode == "attend":
            mask = args[1] if len(args) > 1 else kwargs.get("attention_mask")
            plain = _plain_causal(module, query, key, mask, kwargs)
            out = sink(int(layer_idx), query, key, value, scale, plain)
            if out is not None:
                if not plain:
                    raise RuntimeError("an attention sink computed the output of a non-plain call")
                return out.transpose(1, 2).contiguous(), None
        elif mode == "qkv":
            sink(int(layer_idx), query, key, value, scale)
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
    with _capturing(model, sink, "qk"):
        yield


@contextmanager
def capture_qkv(model: PreTrainedModel, sink: QKVSink) -> Iterator[None]:
    """As :func:`capture_qk`, with the values too: ``sink(layer, q, k, v, scale)``, v
    ``[batch, kv_heads, seq, head_dim]`` (values carry no RoPE)."""
    with _capturing(model, sink, "qkv"):
        yield


@contextmanager
def capture_attention(model: PreTrainedModel, sink: AttendSink) -> Iterator[None]:
    """As :func:`capture_qkv`, with ``sink(layer, q, k, v, scale, plain)``: ``plain`` says the
    call is plain causal self-attention (see :func:`_plain_causal`). For such a call the sink
    may return the attention output ``softmax(scale q k^T) v`` itself, ``[batch, query_heads,
    seq, head_dim]``, which the layer then uses; returning ``None`` (always, when ``plain`` is
    false) lets transformers' SDPA compute it."""
    with _capturing(model, sink, "attend"):
        yield


@contextmanager
def _capturing(
    model: PreTrainedModel, sink: QKSink | QKVSink | AttendSink, mode: str
) -> Iterator[None]:
    previous = model.config._attn_implementation
    model.set_attn_implementation(CAPTURE_IMPL)
    _SINKS.append((sink, mode))
    try:
        yield
    finally:
        _SINKS.pop()
        model.set_attn_implementation(previous)
