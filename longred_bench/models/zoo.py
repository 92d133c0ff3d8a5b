"""Named models: ``tiny-random`` (built in-process, for the smoke profile), ``smollm2-135m``
(real SmolLM2-135M-Instruct weights from the cache: a 4-bit GGUF dequantised, see
``longred-bench data fetch``) and the models registered as *builders*
(:mod:`longred_bench.models.builders`): a name and a function returning the model's Hugging Face
directory, building it first if needed. The layer that builds
``tiny-base`` (the suite's own pretrained model, :mod:`longred_bench.jobs.tiny_base`) registers
it, so loading a model never imports the training code that builds one.

``tiny-random`` is a 4-layer Llama (hidden 64, 4 query / 2 KV heads, RoPE base 1e4, 256-token
window) with seeded random weights and a byte-level tokenizer: every UTF-8 byte is one token. It
exists to run every pipeline end to end in seconds; its numbers mean nothing.

A directory-backed model is checked against its manifest's file records before loading (sizes,
and sha256 when small), and a file that still fails to load is reported in one line with the
entry and the command that repairs it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import torch
from safetensors import SafetensorError
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from longred_bench.cache import check_entry
from longred_bench.errors import UserError
from longred_bench.models.builders import BUILDERS

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


def _registered(name: str, build: Callable[[], Path]) -> Callable[[], Path]:
    """The directory of a registered zoo model, built by its builder if needed, then checked."""

    def locate() -> Path:
        path = Path(build())
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


class _Zoo(Mapping):
    """Named models: fixed ones and those registered as builders, looked up when asked (a
    builder may register after this module is imported)."""

    def __init__(self, fixed: dict[str, Callable], wrap: Callable[[str, Callable], Callable]):
        self.fixed, self.wrap = fixed, wrap

    def _all(self) -> dict[str, Callable]:
        built = {name: self.wrap(name, build) for name, build in BUILDERS.items()}
        return {**self.fixed, **built}

    def __getitem__(self, name: str) -> Callable:
        return self._all()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


# Zoo models that live in a Hugging Face directory (fetched or built on first use).
ZOO_DIRS: Mapping[str, Callable[[], Path]] = _Zoo({"smollm2-135m": _smollm2_dir}, _registered)
ZOO: Mapping[str, Callable[[], tuple[object, object]]] = _Zoo(
    {"tiny-random": tiny_random, "smollm2-135m": _from_dir("smollm2-135m", _smollm2_dir)},
    lambda name, build: _from_dir(name, _registered(name, build)),
)


def load_zoo(name: str) -> tuple[object, object]:
    """(model, tokenizer) for a zoo name."""
    return ZOO[name]()


def zoo_dir(name: str) -> Path:
    """The Hugging Face directory of a directory-backed zoo model (fetched/built if needed)."""
    return ZOO_DIRS[name]()
