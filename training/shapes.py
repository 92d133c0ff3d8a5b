"""Named Llama-architecture model shapes, their parameter counts and their FLOPs per token.

A shape is numbers only (no weights): what the throughput benchmark builds at random
(:func:`random_model`) and what the memory model
(:mod:`~longred_bench.training.memory_model`) reasons about. Built in:

- ``smollm2-135m``: SmolLM2-135M (30 layers, hidden 576, 9 / 3 heads, tied embeddings);
- ``llama-1b``: Llama-3.2-1B (16 layers, hidden 2048, 32 / 8 heads, 128,256 tokens, tied);
- ``llama3-8b``: Llama-3-8B (32 layers, hidden 4096, 32 / 8 heads, 128,256 tokens);
  ``.with_layers(1)`` is one of its decoder layers with its embeddings and head;
- ``mistral-7b-v0.3``: Mistral-7B-v0.3 (32 layers, hidden 4096, 32 / 8 heads, 32,768 tokens,
  a 32K window, RoPE base 1e6);
- ``llama2-7b``: Llama-2-7B (32 layers, hidden 4096, 32 heads without GQA, 32,000 tokens, a 4K
  window).

FLOPs (:meth:`ModelShape.forward_flops_per_token`) count every matrix product of a forward pass
(2 per multiply-add): the projections and MLP of each layer, the vocabulary projection, and
causal attention, ``q k^T`` and ``p v`` over the ``(T + 1) / 2`` earlier positions a token sees on
average in a row of ``T``; a training step is 3x that (forward, and a backward pass of twice
its cost). Recomputation by activation checkpointing is not counted (model FLOPs, not hardware
FLOPs), nor are norms, RoPE and softmax.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class ModelShape:
    """A decoder-only Llama shape."""

    name: str
    vocab: int
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    tied: bool
    window: int = 8192
    rope_theta: float = 500_000.0

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def with_layers(self, layers: int) -> ModelShape:
        """The same shape with ``layers`` decoder layers (e.g. one layer of a large model)."""
        name = self.name if layers == self.layers else f"{self.name}-{layers}l"
        return replace(self, name=name, layers=layers)

    @property
    def layer_params(self) -> int:
        """Weights of one decoder layer (projections, MLP, two norms)."""
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        attention = self.hidden * (2 * q + 2 * kv)
        return attention + 3 * self.hidden * self.intermediate + 2 * self.hidden

    @property
    def params(self) -> int:
        """All weights (tied embeddings counted once)."""
        embeddings = self.vocab * self.hidden * (1 if self.tied else 2)
        return self.layers * self.layer_params + embeddings + self.hidden

    def forward_flops_per_token(self, tokens: int, *, head: bool = True) -> float:
        """Matmul FLOPs of one token's forward pass in a causal row of ``tokens`` tokens."""
        matmul = self.layers * (self.layer_params - 2 * self.hidden)
        if head:
            matmul += self.vocab * self.hidden
        attention = self.layers * 2 * 2 * self.heads * self.head_dim * (tokens + 1) / 2
        return 2 * matmul + attention

    def train_flops_per_token(self, tokens: int) -> float:
        """Forward and backward: 3x the forward FLOPs."""
        return 3 * self.forward_flops_per_token(tokens)

    @classmethod
    def from_config(cls, config: Any, name: str | None = None) -> ModelShape:
        """The shape of a transformers Llama-like config (e.g. a model's, for a dry run)."""
        heads = int(config.num_attention_heads)
        params = getattr(config, "rope_parameters", None) or {}
        return cls(
            name=name or str(getattr(config, "name_or_path", "") or config.model_type),
            vocab=int(config.vocab_size), hidden=int(config.hidden_size),
            intermediate=int(config.intermediate_size), layers=int(config.num_hidden_layers),
            heads=heads, kv_heads=int(getattr(config, "num_key_value_heads", None) or heads),
            tied=bool(getattr(config, "tie_word_embeddings", False)),
            window=int(config.max_position_embeddings),
            rope_theta=float(params.get("rope_theta", 10_000.0)),
        )  # fmt: skip

    def llama_config(self, **overrides: Any) -> Any:
        """A transformers ``LlamaConfig`` of this shape."""
        from transformers import LlamaConfig

        return LlamaConfig(
            vocab_size=self.vocab, hidden_size=self.hidden, intermediate_size=self.intermediate,
            num_hidden_layers=self.layers, num_attention_heads=self.heads,
            num_key_value_heads=self.kv_heads, tie_word_embeddings=self.tied,
            max_position_embeddings=self.window,
            rope_parameters={"rope_type": "default", "rope_theta": self.rope_theta},
            **overrides,
        )  # fmt: skip


SHAPES: dict[str, ModelShape] = {
    s.name: s
    for s in (
        ModelShape("smollm2-135m", 49_152, 576, 1536, 30, 9, 3, True, 8192, 100_000.0),
        ModelShape("llama-1b", 128_256, 2048, 8192, 16, 32, 8, True, 8192),
        ModelShape("llama3-8b", 128_256, 4096, 14_336, 32, 32, 8, False, 8192),
        ModelShape("mistral-7b-v0.3", 32_768, 4096, 14_336, 32, 32, 8, False, 32_768, 1e6),
        ModelShape("llama2-7b", 32_000, 4096, 11_008, 32, 32, 32, False, 4096, 10_000.0),
    )
}


def shape(name: str, layers: int | None = None) -> ModelShape:
    """A built-in shape by name, optionally with another number of layers."""
    if name not in SHAPES:
        raise KeyError(f"unknown model shape {name!r}; shapes: {', '.join(SHAPES)}")
    return SHAPES[name] if layers is None else SHAPES[name].with_layers(layers)


def random_model(
    model_shape: ModelShape, *, seed: int = 0, dtype: Any = None, device: Any = "cpu"
) -> Any:
    """A ``LlamaForCausalLM`` of ``model_shape`` with seeded random weights (no hub, no files),
    attending through SDPA, made on ``device`` (a GPU initialises a 1B model in a moment)."""
    import torch
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    with torch.device(device):
        model = LlamaForCausalLM(model_shape.llama_config(attn_implementation="sdpa"))
    return model if dtype is None else model.to(dtype)
