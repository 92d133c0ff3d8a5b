"""The tiny ``ppl`` task's passages on documents written for the purpose: the longest run of
whole sentences from 80 to 120 words, taken verbatim."""

from __future__ import annotations

import pytest

from longred_bench.data.corpora import Document
from longred_bench.errors import UserError
from longred_bench.taskdata.tiny_ppl import build_ppl


def _sentence(words: int) -> str:
    return "The " + "ox " * (words - 2) + "ran."


def _document(*sizes: int) -> Document:
    return Document("sotu", "d", "d", " ".join(_sentence(w) for w in sizes))


def test_a_passage_may_hold_exactly_120_words():
    """Four sentences of 30 words make one passage of 120 words, verbatim."""
    doc = _document(30, 30, 30, 30)
    (row,) = build_ppl([doc], n=1, seed=0)
    assert row["text"] == doc.text and len(row["text"].split()) == 120
    assert (row["corpus"], row["doc_id"], row["start"], row["end"]) == ("sotu", "d", 0, 371)


def test_a_passage_stops_at_the_last_whole_sentence_within_120_words():
    """A passage ends at the last whole sentence that keeps it within 120 words."""
    doc = _document(30, 30, 30, 31)
    (row,) = build_ppl([doc], n=1, seed=0)
    assert len(row["text"].split()) == 90
    assert doc.text.startswith(row["text"] + " ")


def test_a_passage_holds_80_words_at_least():
    """80 words make a passage; 79 do not."""
    (row,) = build_ppl([_document(40, 40)], n=1, seed=0)
    assert len(row["text"].split()) == 80
    with pytest.raises(UserError, match="yields 0 passages"):
        build_ppl([_document(40, 39)], n=1, seed=0)
