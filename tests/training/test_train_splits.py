"""Training reads the train splits only, offline (``training.data``): a corpus stream's
documents, the retrieval rows' filler sentences; and the pretraining mix's retrieval and copy
rows are their fractions of all rows."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import longred_bench.data.corpora as corpora
import longred_bench.training.data as data
import longred_bench.training.pretrain.retrieval as retrieval
from longred_bench.data.corpora import Document
from longred_bench.models.zoo import byte_tokenizer


def test_a_corpus_stream_reads_only_the_train_split(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, str]] = []

    def token_ids(tokenizer: Any, corpus: str, split: str = "train") -> list[torch.Tensor]:
        asked.append((corpus, split))
        return [torch.arange(100, dtype=torch.int32)]

    monkeypatch.setattr(data, "corpus_token_ids", token_ids)
    got = data.stream_data(byte_tokenizer(), "austen+kjv", 50, seed=0)
    assert asked == [("austen", "train"), ("kjv", "train")]
    assert got.ids.shape == (4, 50)  # two 50-token windows of each corpus's one document


def test_the_retrieval_filler_reads_the_train_split(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, str]] = []

    def documents(corpus: str, split: str = "all", **_: Any) -> list[Document]:
        asked.append((corpus, split))
        return [Document(corpus, "d", "d", "One line. Two lines.")]

    monkeypatch.setattr(corpora, "load_documents", documents)
    assert data._filler_sentences(None) == ["One line.", "Two lines."]
    assert asked == [("brown", "train")]


def test_retrieval_and_copy_rows_are_their_shares_of_all_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 400 prose rows are the 60% left by retrieval 0.3 and copy 0.1: 666.7 rows in all, of
    # which 200 retrieval rows and 66.7 -> 67 copy rows.
    sizes = {"brown": 300, "austen+kjv": 100}

    def windows(tokenizer: Any, source: str, length: int, split: str = "train") -> torch.Tensor:
        return torch.full((sizes[source], length), 7, dtype=torch.long)

    def copies(tokenizer: Any, n: int, length: int, seed: int) -> torch.Tensor:
        return torch.full((n, length), 9, dtype=torch.long)

    monkeypatch.setattr(data, "corpus_windows", windows)
    monkeypatch.setattr(data, "_filler_sentences", lambda tokenizer: ["A line."])
    monkeypatch.setattr(retrieval, "retrieval_examples", lambda tok, f, *, n, **kw: ["r"] * n)
    monkeypatch.setattr(data, "copy_mix_rows", copies)
    ids, _ = data.pretrain_windows(
        byte_tokenizer(), 16, retrieval_fraction=0.3, seed=0, copy_fraction=0.1
    )
    prose, copied = int((ids[:, 0] == 7).sum()), int((ids[:, 0] == 9).sum())
    assert (prose, len(ids) - prose - copied, copied) == (400, 200, 67)
