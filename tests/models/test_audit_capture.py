"""The capturing attention implementation on its own: which calls count as plain causal
self-attention, the scale and layer a sink is given, nesting, the output a sink may return,
and the model's own implementation back afterwards."""

from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

from longred_bench.models.capture import (
    _capturing_attention,
    _plain_causal,
    capture_attention,
    capture_qk,
    capture_qkv,
)


class _Model:
    """What the capture needs of a model: its config's implementation and a setter."""

    def __init__(self) -> None:
        self.config = SimpleNamespace(_attn_implementation="sdpa")

    def set_attn_implementation(self, name: str) -> None:
        self.config._attn_implementation = name


class _Attention(torch.nn.Module):
    def __init__(self, layer_idx: int = 3, is_causal: bool = True) -> None:
        super().__init__()
        self.layer_idx, self.is_causal, self.num_key_value_groups = layer_idx, is_causal, 1


def _qkv(seq: int = 4, keys: int | None = None) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    q = torch.randn(1, 2, seq, 8, generator=g)
    k, v = (torch.randn(1, 2, keys or seq, 8, generator=g) for _ in range(2))
    return q, k, v


def test_plain_causal_is_a_maskless_causal_self_attention_and_nothing_else() -> None:
    module = _Attention()
    q, k, _ = _qkv()
    assert _plain_causal(module, q, k, None, {})
    assert not _plain_causal(module, q, k, torch.ones(1, 1, 4, 4, dtype=torch.bool), {})
    assert not _plain_causal(module, q[:, :, :1], k[:, :, :1], None, {})  # one query
    assert not _plain_causal(module, q[:, :, :2], k, None, {})  # a cache: more keys
    assert not _plain_causal(module, q, k, None, {"dropout": 0.1})
    assert _plain_causal(module, q, k, None, {"dropout": 0.0})
    assert not _plain_causal(_Attention(is_causal=False), q, k, None, {})
    assert not _plain_causal(module, q, k, None, {"is_causal": False})
    assert _plain_causal(_Attention(is_causal=False), q, k, None, {"is_causal": True})
    for name in ("softcap", "position_bias", "s_aux", "sinks", "cache"):
        assert not _plain_causal(module, q, k, None, {name: 1.0}), name


def test_the_sink_gets_the_layer_and_the_scale_the_layer_uses() -> None:
    model, seen = _Model(), []
    q, k, v = _qkv()
    with capture_qk(model, lambda layer, q_, k_, scale: seen.append((layer, scale))):
        assert model.config._attn_implementation == "longred_capture"
        out, _ = _capturing_attention(_Attention(), q, k, v, None, scaling=0.25)
        _capturing_attention(_Attention(layer_idx=5), q, k, v, None)
    assert seen == [(3, 0.25), (5, pytest.approx(8**-0.5))]
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.25)
    torch.testing.assert_close(out, want.transpose(1, 2))
    assert model.config._attn_implementation == "sdpa"


def test_the_innermost_capture_gets_the_call_and_each_exit_restores_the_implementation() -> None:
    model, outer, inner = _Model(), [], []
    q, k, v = _qkv()
    with capture_qk(model, lambda *a: outer.append(a[0])):
        with capture_qkv(model, lambda layer, q_, k_, v_, s: inner.append((layer, v_))):
            _capturing_attention(_Attention(), q, k, v, None)
        assert model.config._attn_implementation == "longred_capture"
        _capturing_attention(_Attention(layer_idx=1), q, k, v, None)
    assert [layer for layer, _ in inner] == [3] and inner[0][1] is v
    assert outer == [1]
    assert model.config._attn_implementation == "sdpa"
    with pytest.raises(KeyError), capture_qk(model, lambda *a: None):
        raise KeyError("inside")
    assert model.config._attn_implementation == "sdpa"


def test_an_output_the_sink_computes_is_the_layers_and_is_refused_off_a_plain_call() -> None:
    model = _Model()
    q, k, v = _qkv()

    def sink(layer, q_, k_, v_, scale, plain):
        return torch.full_like(q_, float(layer)) if plain else None

    with capture_attention(model, sink):
        out, weights = _capturing_attention(_Attention(), q, k, v, None)
        assert weights is None and out.shape == (1, 4, 2, 8)  # [batch, seq, heads, dim]
        assert bool((out == 3.0).all())

    def eager(layer, q_, k_, v_, scale, plain):
        return torch.zeros_like(q_)

    with capture_attention(model, eager), pytest.raises(RuntimeError, match="non-plain"):
        _capturing_attention(_Attention(), q[:, :, :2], k, v, None)
