"""Named models: ``tiny-random`` (built in-process, for the smoke profile), ``smollm2-135m``
(real SmolLM2-135M-Instruct weights from the cache, see ``longred-bench data fetch``) and the
models that installed packages register as *builders* under the entry-point group
``longred_bench.zoo``: a name and a function returning the model's Hugging Face directory,
building it first if needed. This package registers ``tiny-base`` (the suite's own pretrained
model, built on first use by the ``pretrain`` recipe,
:func:`longred_bench.jobs.tiny_base.tiny_base_dir`), so loading a model never imports the training
code that builds one.

``tiny-random`` is a 4-layer Llama (hidden 64, 4 query / 2 KV heads, RoPE base 1e4, 256-token
window) with seeded random weights and a byte-level tokenizer: every UTF-8 byte is one token. It
exists to run every pipeline end to end in seconds; its numbers mean nothing.

A directory-backed model is checked against its manifest's file records before loading (sizes,
and sha256 when small), and a file that still fails to load is reported in one line with the
entry and the command that repairs it.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

import torch
from safetensors import SafetensorError
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from longred_bench.cache import check_entry
from longred_bench.errors import UserError

TINY_SEED = 0
# What loading a damaged model directory raises (JSONDecodeError is a ValueError).
MODEL_FILE_ERRORS = (OSError, ValueError, SafetensorError)


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


def _smollm2_dir() -> Path:
    from longred_bench.data.corpora import model_dir

    return model_dir("smollm2-135m")


ZOO_GROUP = "longred_bench.zoo"


def _registered(name: str, entry: EntryPoint) -> Callable[[], Path]:
    """The directory of a registered zoo model, built by its builder if needed, then checked."""

    def locate() -> Path:
        path = Path(entry.load()())
        check_model_dir(path, _fix_for(name, path))
        return path

    return locate


def _fix_for(name: str, path: Path) -> str:
    """The command that repairs zoo model ``name`` stored at ``path``."""
    if name == "smollm2-135m":
        return "run `longred-bench data fetch --sources smollm2 --force`"
    return f"delete {path} and load {name} again to rebuild it"


def check_model_dir(path: Path, fix: str) -> None:
    """Raise :class:`UserError` if a model directory fails its manifest (absent: not checked)."""
    check = check_entry(path, required=False)
    if not check.usable:
        raise UserError(f"cache entry {path} is corrupt: {check.detail}; {fix}")


def model_file_error(path: Path, exc: Exception, fix: str) -> UserError:
    """One-line error for model files in ``path`` that failed to load with ``exc``."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    return UserError(f"model files in {path} are unreadable ({first}); {fix}")


def _from_dir(name: str, locate: Callable[[], Path]) -> Callable[[], tuple[object, object]]:
    def load() -> tuple[object, object]:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        path = locate()
        try:
            model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
            return model, AutoTokenizer.from_pretrained(path)
        except MODEL_FILE_ERRORS as exc:
            raise model_file_error(path, exc, _fix_for(name, path)) from None

    return load


# Zoo models that live in a Hugging Face directory (fetched or built on first use).
ZOO_DIRS: dict[str, Callable[[], Path]] = {
    "smollm2-135m": _smollm2_dir,
    **{ep.name: _registered(ep.name, ep) for ep in entry_points(group=ZOO_GROUP)},
}
ZOO: dict[str, Callable[[], tuple[object, object]]] = {
    "tiny-random": tiny_random,
    **{name: _from_dir(name, locate) for name, locate in ZOO_DIRS.items()},
}


def load_zoo(name: str) -> tuple[object, object]:
    """(model, tokenizer) for a zoo name."""
    return ZOO[name]()


def zoo_dir(name: str) -> Path:
    """The Hugging Face directory of a directory-backed zoo model (fetched/built if needed)."""
    return ZOO_DIRS[name]()
