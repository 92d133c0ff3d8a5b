"""Edges of the training windows: a corpus's token cache is per split, a packed source joins
documents with an end-of-text id of 0 too, and a document of exactly one window counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

import longred_bench.data.corpora as corpora
from longred_bench.data.corpora import Document
from longred_bench.models.zoo import byte_tokenizer
from longred_bench.training.data import corpus_token_ids, stream_data


class WordTokenizer:
    """One id per whitespace word (a new word gets the next id)."""

    def __init__(self, eos: int | None = None) -> None:
        self.vocab: dict[str, int] = {}
        self.eos_token_id = eos

    def __call__(self, texts: Any, add_special_tokens: bool = False) -> dict:
        one = isinstance(texts, str)
        ids = [[self.vocab.setdefault(w, len(self.vocab) + 1) for w in t.split()]
               for t in ([texts] if one else texts)]  # fmt: skip
        return {"input_ids": ids[0] if one else ids}

    def __len__(self) -> int:
        return len(self.vocab) + 1


def test_the_token_cache_keeps_each_split_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))

    def documents(corpus: str, split: str = "all", **_: Any) -> list[Document]:
        return [Document(corpus, "d", "d", f"{split} words of the {split} split")]

    monkeypatch.setattr(corpora, "load_documents", documents)
    tok = byte_tokenizer()
    corpus_token_ids(tok, "austen", "train")  # cached first
    test = corpus_token_ids(tok, "austen", "test")
    want = tok("test words of the test split", add_special_tokens=False)["input_ids"]
    assert test[0].tolist() == want


def test_packed_documents_are_joined_with_an_end_of_text_id_of_zero(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("one two three")
    (folder / "b.txt").write_text("four five six")
    got = stream_data(WordTokenizer(eos=0), f"txt:{folder}+packed", 7, seed=0)
    assert got.ids.tolist() == [[1, 2, 3, 0, 4, 5, 6]]


def test_a_document_of_exactly_one_window_is_a_long_document(tmp_path: Path) -> None:
    path = tmp_path / "exact.txt"
    path.write_text("a b c d")
    got = stream_data(WordTokenizer(), f"txt:{path}", 4, seed=0)
    assert torch.equal(got.ids, torch.tensor([[1, 2, 3, 4]]))
    assert got.record["long_documents"] == 1
    bare = stream_data(WordTokenizer(), str(path), 4, seed=0)  # a bare text file
    assert bare.record["long_documents"] == 1 and bare.record["windows"] == 1
