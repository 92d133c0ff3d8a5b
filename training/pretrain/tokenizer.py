"""The byte-level BPE tokenizer of the suite's own tiny Llama (``tiny-base``).

- **Model**: byte-level BPE (GPT-2 style: every UTF-8 byte has a token, so any text encodes and
  ``decode(encode(text)) == text`` exactly), trained with the ``tokenizers`` library.
- **Pre-tokenization**: digits are split off one by one (``Digits(individual_digits=True)``)
  before the byte-level split, so a number is always one token per digit and a model can copy
  pass keys, 7-digit values and UUIDs digit by digit; the space before a number is a token of
  its own.
- **Special tokens**: ``<s>`` (bos, id 0), ``</s>`` (eos, id 1), ``<pad>`` (pad, id 2).
  Nothing is added automatically: ``add_special_tokens=True`` and ``False`` give the same ids.
  lm-eval's ``HFLM`` encodes contexts without special tokens and conditions rolling
  log-likelihoods on the bos id, and the suite's token windows
  (:func:`longred_bench.data.texts.token_windows`) encode without them; pretraining data that wants
  a document boundary writes ``<s>`` / ``</s>`` ids itself, so the same ids reach the model in
  training and evaluation.
- **Decoding** never "cleans up" spaces (``clean_up_tokenization_spaces=False``), which would
  break the round trip of text such as ``"a , b"``.
- **Training texts** (:func:`tokenizer_texts`): the documents of the ``train`` splits of Brown,
  Austen and KJV (:func:`longred_bench.data.corpora.load_documents`), in that order; held-out
  splits are never read. Training is deterministic: the same texts give the same vocabulary and
  merges (ties between equally frequent pairs are broken by token ids, not by hash order).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from longred_bench.cache import atomic_dir, cache_dir, check_entry, warn, write_manifest
from longred_bench.data.corpora import load_documents
from longred_bench.errors import UserError
from longred_bench.models.zoo import byte_tokenizer
from longred_bench.training.versions import TOKENIZER_VERSION

TOKENIZER_CORPORA: tuple[str, ...] = ("brown", "austen", "kjv")
SPECIAL_TOKENS: tuple[str, ...] = ("<s>", "</s>", "<pad>")
DEFAULT_VOCAB_SIZE = 4096
_MIN_VOCAB = 256 + len(SPECIAL_TOKENS)  # the byte alphabet plus the special tokens


def tokenizer_texts(
    corpora: Sequence[str] = TOKENIZER_CORPORA, *, cache: Path | None = None
) -> list[str]:
    """The texts of every ``train``-split document of ``corpora``, corpus by corpus, in order."""
    return [doc.text for corpus in corpora for doc in load_documents(corpus, "train", cache=cache)]


def _pre_tokenizer() -> pre_tokenizers.PreTokenizer:
    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )


def train_tokenizer(
    texts: Iterable[str], vocab_size: int = DEFAULT_VOCAB_SIZE
) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer of ``vocab_size`` tokens trained on ``texts`` (see module doc).

    The vocabulary may come out smaller than ``vocab_size`` when the texts hold too few distinct
    pairs to merge.
    """
    if vocab_size < _MIN_VOCAB:
        raise UserError(
            f"vocab_size {vocab_size} is too small: a byte-level BPE needs at least {_MIN_VOCAB}"
        )
    texts = [text for text in texts if text]
    if not texts:
        raise UserError("no text to train the tokenizer on: pass at least one non-empty text")
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = _pre_tokenizer()
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer, length=len(texts))
    bos, eos, pad = SPECIAL_TOKENS
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=bos,
        eos_token=eos,
        pad_token=pad,
        clean_up_tokenization_spaces=False,
    )


def tokenizer_for_pretraining(kind: str, vocab_size: int) -> object:
    """The byte tokenizer, or the BPE tokenizer trained on the train splits (cached)."""
    from transformers import AutoTokenizer

    if kind == "byte":
        return byte_tokenizer()
    path = cache_dir() / "tokenizers" / f"bpe-{vocab_size}-v{TOKENIZER_VERSION}"
    check = check_entry(path, required=False)
    if check.status == "corrupt":
        warn(f"tokenizer cache {path} is damaged ({check.detail}); training it again")
    if not check.usable or not (path / "tokenizer.json").is_file():
        tokenizer = train_tokenizer(tokenizer_texts(), vocab_size=vocab_size)
        with atomic_dir(path, replace=True) as tmp:
            tokenizer.save_pretrained(tmp)
            write_manifest(tmp, {"kind": "tokenizer", "vocab_size": vocab_size})
    return AutoTokenizer.from_pretrained(path)
