"""What the training tests share: a recipe's config at profile ``smoke``; a tiny Llama."""

from __future__ import annotations

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from longred_bench.training.config import TrainConfig, resolve_config


def smoke(recipe: str, **overrides) -> TrainConfig:
    """``recipe`` resolved at profile ``smoke`` with ``overrides``."""
    return resolve_config(recipe, profile="smoke", overrides=overrides)


def tiny_llama(tied: bool = True, dtype: torch.dtype = torch.float32) -> LlamaForCausalLM:
    """A seeded 2-layer Llama of vocabulary 257 and window 128 (``tied``: tied embeddings)."""
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=257, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
        tie_word_embeddings=tied,
    )  # fmt: skip
    return LlamaForCausalLM(config).to(dtype)
