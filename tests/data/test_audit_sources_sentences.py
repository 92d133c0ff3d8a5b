"""Which texts a training member reads and what its record keeps, the side of a fallback source
chosen once per process, the 60-word limit of a usable sentence and Brown's closing bracket."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import longred_bench.data.corpora as corpora
from longred_bench.data import decode_prose, hub_corpora, source_documents
from longred_bench.data.corpora import Document
from longred_bench.data.corpus_spec import parse_member
from longred_bench.data.local_corpora import texts_fingerprint
from longred_bench.data.sentences import split_sentences
from longred_bench.data.source_documents import member_documents, source_read


def test_a_corpus_member_trains_on_its_train_split(monkeypatch: pytest.MonkeyPatch) -> None:
    """The held-out documents (validation, test) of a registry corpus are never trained on."""
    asked: list[tuple[str, str]] = []

    def documents(corpus: str, split: str = "all", **_: Any) -> list[Document]:
        asked.append((corpus, split))
        return [Document(corpus, "d", "d", f"text of {split}")]

    monkeypatch.setattr(corpora, "load_documents", documents)
    texts, record = member_documents(parse_member("austen", "austen"))
    assert asked == [("austen", "train")] and texts == ["text of train"]
    assert (record["split"], record["documents"]) == ("train", 1)


def test_a_saved_dataset_member_records_a_fingerprint_of_its_texts(tmp_path: Path) -> None:
    import datasets

    folder = tmp_path / "saved"
    datasets.Dataset.from_dict({"text": ["one", "two"]}).save_to_disk(str(folder))
    texts, record = member_documents(parse_member(f"disk:{folder}", "s"))
    assert texts == ["one", "two"] and record["documents"] == 2
    assert record["fingerprint"] == texts_fingerprint(texts)
    assert record["dataset_fingerprint"]


def test_a_fallback_sources_side_is_chosen_once_per_process(monkeypatch) -> None:
    """The hub not answering when a source is first read makes it read its fallback for the
    rest of the process, the hub answering later included (a unit's key names one side)."""
    calls: list[str] = []

    def available(member: Any) -> None:
        calls.append(member.spec)
        if len(calls) == 1:
            raise hub_corpora.HubUnavailable("no answer")

    monkeypatch.setattr(hub_corpora, "check_available", available)
    monkeypatch.setattr(source_documents, "_CHOSEN", {})
    spec = "hf:someone/data|austen"
    assert source_read(spec) == "austen"
    assert source_read(spec) == "austen" and len(calls) == 1


def _sentence(words: int) -> str:
    return "Word " + " ".join(["word"] * (words - 1)) + "."


def test_a_usable_sentence_has_at_most_60_words() -> None:
    text = _sentence(60) + " " + _sentence(61) + " " + _sentence(3) + " " + _sentence(2)
    got = [(s.words, s.usable) for s in split_sentences(text)]
    assert got == [(60, True), (61, False), (3, True), (2, False)]


def test_brown_square_brackets_hug_what_they_hold() -> None:
    words = ["see", "[", "note", "]", ",", "then", "(", "go", ")", "."]
    assert decode_prose.detokenize(words) == "see [note], then (go)."
