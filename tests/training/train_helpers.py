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


def stand_in_measurement(monkeypatch, all_ids, target: int, gathered, change) -> None:
    """Stand-ins for what LongRecipe's anchor measurement
    (:func:`~longred_bench.training.anchors.measure_anchors`) loads and exchanges: no model
    (an extended window of ``target`` tokens), ``all_ids`` as the window set, ``gathered`` as
    the exchange between processes, ``change`` as the logit change of a window; on the CPU."""
    from types import SimpleNamespace

    import longred_bench.models.loading as loading
    import longred_bench.training.collectives as collectives
    import longred_bench.training.data as data
    import longred_bench.training.devices as devices
    import longred_bench.training.impactful_tokens as impactful_tokens
    import longred_bench.training.peak_memory as peak_memory

    model = SimpleNamespace(eval=lambda: model)
    monkeypatch.setattr(loading, "load_config", lambda name: None)
    monkeypatch.setattr(
        loading,
        "extended_config",
        lambda config, rope: SimpleNamespace(max_position_embeddings=target),
    )
    monkeypatch.setattr(
        loading, "load", lambda *a, **k: SimpleNamespace(tokenizer=None, model=model)
    )
    monkeypatch.setattr(collectives, "on_every_process", lambda value, world: value)
    monkeypatch.setattr(collectives, "every_process", gathered)
    monkeypatch.setattr(data, "window_set", lambda *a, **k: (all_ids, None))
    monkeypatch.setattr(devices, "resolve_device", lambda cfg: ("cpu", torch.float32))
    monkeypatch.setattr(peak_memory, "PeakMemory", lambda device: SimpleNamespace(info=dict))
    monkeypatch.setattr(impactful_tokens, "logit_change", change)
