"""The tiny model's byte-level BPE tokenizer: determinism, digits, round trip, save/load.

Unit tests train on a few KB of seeded synthetic prose (milliseconds); the check of the real
training texts needs the cached Brown, Austen and KJV corpora and skips without them unless
``--run-network`` is given.
"""

from __future__ import annotations

import random
import re
import uuid
from pathlib import Path

import pytest
from data_helpers import ensure_cached
from transformers import AutoTokenizer

from longred_bench.data.corpora import load_documents
from longred_bench.data.texts import token_windows
from longred_bench.errors import UserError
from longred_bench.training.pretrain.tokenizer import (
    TOKENIZER_CORPORA,
    tokenizer_texts,
    train_tokenizer,
)

VOCAB = 300
TRICKY = [
    'He said, "Well , I never!"  Then   he left.\n\nChapter 2\n\tIndented line; (aside) -- done?',
    "The pass key is 90210. Remember it. What is the pass key? The pass key is 90210.",
    "One of the special magic numbers for quiet-harbor is: 1234567.",
    f"One of the special magic uuids for {uuid.UUID(int=7, version=4)} is: "
    f"{uuid.UUID(int=12345678901234567890, version=4)}.",
    "Café — naïve “quotes” ‘and’ ümlauts… 3.14159, 1,000,000 and 2nd/3rd.\n",
    "  leading and trailing spaces  ",
    "",
]


def _prose(seed: int, sentences: int = 300) -> list[str]:
    """Seeded prose-like paragraphs (about 10 KB) with some numbers in them."""
    rng = random.Random(seed)
    nouns = ["garden", "river", "letter", "window", "captain", "village", "doctor", "market"]
    verbs = ["watched", "followed", "answered", "carried", "visited", "admired"]
    paragraphs, current = [], []
    for _ in range(sentences):
        words = [rng.choice(["The", "A", "Every"]), rng.choice(nouns), rng.choice(verbs)]
        words += ["the", rng.choice(nouns), "in", str(rng.randint(1700, 1900))]
        current.append(" ".join(words) + rng.choice([".", ".", "!", "?"]))
        if rng.random() < 0.2:
            paragraphs.append(" ".join(current))
            current = []
    return [*paragraphs, " ".join(current)]


@pytest.fixture(scope="module")
def tok():
    return train_tokenizer(_prose(0), vocab_size=VOCAB)


def test_training_is_deterministic() -> None:
    first = train_tokenizer(_prose(0), vocab_size=VOCAB).backend_tokenizer.to_str()
    second = train_tokenizer(_prose(0), vocab_size=VOCAB).backend_tokenizer.to_str()
    assert first == second
    other = train_tokenizer(_prose(1), vocab_size=VOCAB).backend_tokenizer.to_str()
    assert other != first  # the texts do matter


def test_vocabulary_size_and_special_tokens(tok) -> None:
    assert len(tok) == VOCAB
    assert (tok.bos_token, tok.eos_token, tok.pad_token) == ("<s>", "</s>", "<pad>")
    assert (tok.bos_token_id, tok.eos_token_id, tok.pad_token_id) == (0, 1, 2)
    assert tok("<s>x</s>", add_special_tokens=False)["input_ids"][::2] == [0, 1]
    merged = [t for t in tok.get_vocab() if len(t) > 1 and not t.startswith("<")]
    assert merged, "no merges were learned"


@pytest.mark.parametrize("text", TRICKY)
def test_round_trip_and_no_automatic_special_tokens(tok, text: str) -> None:
    with_special = tok(text, add_special_tokens=True)["input_ids"]
    without = tok(text, add_special_tokens=False)["input_ids"]
    assert with_special == without
    assert tok.decode(without) == text


def test_digits_are_one_token_each(tok) -> None:
    text = "In 1776 the key 90210 and 1234567 and 3.14159 and 0042."
    pieces = tok.convert_ids_to_tokens(tok(text)["input_ids"])
    with_digits = [p for p in pieces if re.search(r"\d", p)]
    assert all(re.fullmatch(r"\d", p) for p in with_digits), with_digits
    assert len(with_digits) == sum(c.isdigit() for c in text)
    # numbers the tokenizer saw many times during training are still not merged
    assert "1" in tok.get_vocab() and not any(
        re.search(r"\d", t) and len(t) > 1 for t in tok.get_vocab()
    )


def test_save_and_load_keep_everything(tok, tmp_path: Path) -> None:
    tok.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert (loaded.bos_token_id, loaded.eos_token_id, loaded.pad_token_id) == (0, 1, 2)
    for text in TRICKY:
        ids = loaded(text)["input_ids"]
        assert ids == tok(text, add_special_tokens=False)["input_ids"]
        assert loaded.decode(ids) == text


def test_batch_padding_and_token_windows(tok, tmp_path: Path) -> None:
    tok.padding_side = "left"  # as lm-eval's HFLM pads
    batch = tok(["The river.", "A doctor watched the market in 1801."], padding="longest")
    short, long = batch["input_ids"]
    assert len(short) == len(long) and short[0] == tok.pad_token_id
    assert batch["attention_mask"][0][0] == 0
    source = tmp_path / "prose.txt"
    source.write_text("\n\n".join(_prose(2)), encoding="utf-8")
    windows = token_windows(tok, str(source), num_texts=4, seq_len=32)
    assert windows.shape == (4, 32)
    full = tok(source.read_text(encoding="utf-8"), add_special_tokens=False)["input_ids"]
    assert windows[0].tolist() == full[:32]


def test_bad_input_is_a_user_error() -> None:
    with pytest.raises(UserError, match="vocab_size"):
        train_tokenizer(_prose(0), vocab_size=100)
    with pytest.raises(UserError, match="no text"):
        train_tokenizer(["", ""])


def test_tokenizer_texts_are_the_train_splits(request: pytest.FixtureRequest) -> None:
    ensure_cached(request, *TOKENIZER_CORPORA)
    texts = tokenizer_texts()
    train = [d.text for c in TOKENIZER_CORPORA for d in load_documents(c, "train")]
    assert texts == train
    held_out = {d.text for c in TOKENIZER_CORPORA for s in ("validation", "test")
                for d in load_documents(c, s)}  # fmt: skip
    assert not held_out & set(texts)
    tok = train_tokenizer(texts)
    assert len(tok) == 4096
    passage = load_documents("brown", "test")[0].text[:2000]
    assert tok.decode(tok(passage)["input_ids"]) == passage
    # the real vocabulary learns words: prose takes well under 2 tokens per word
    assert len(tok(passage)["input_ids"]) < 2 * len(passage.split())
