"""The tiny ``passkey`` task on a passage written for the purpose: which passages it takes,
where each planted sentence goes, which numbers it draws and what the prompt asks."""

from __future__ import annotations

import random
import types

import pytest

from longred_bench.data.corpora import Document
from longred_bench.errors import UserError
from longred_bench.taskdata import tiny_sampling
from longred_bench.taskdata.ruler.phrasings import PASSKEY_FAMILIES
from longred_bench.taskdata.tiny_passkey import (
    PASSKEY_QUESTION,
    PASSKEY_SENTENCE,
    build_passkey,
)

S1 = "The old clerk walked slowly along the quiet river road to the town hall today."
S2 = "He carried a heavy bag of letters and a small lamp for the long dark night."
S3 = "At the gate he stopped to rest and watched the boats drift past the mill."
PASSAGE = f"{S1} {S2} {S3}"  # 3 sentences, 46 words


def _rigged(numbers: list[int | str], slots: list[int | str]):
    """A ``random`` module whose generators draw the given 5-digit numbers (``"least"`` and
    ``"most"``: the ends of the range offered) and planting slots (``"last"``: the largest slot
    offered, after the passage's last sentence)."""

    class Rigged(random.Random):
        def randint(self, a: int, b: int) -> int:
            if a == 10000 and numbers:
                number = numbers.pop(0)
                return {"least": a, "most": b}.get(number, number)
            if a == 0 and slots:
                slot = slots.pop(0)
                return b if slot == "last" else slot
            return super().randint(a, b)

    return types.SimpleNamespace(Random=Rigged)


def _distractor(passage: str, number: str) -> str:
    (sentence,) = [
        d.format(number=number)
        for d in PASSKEY_FAMILIES["heldout"].distractors
        if d.format(number=number) in passage
    ]
    return sentence


def test_planted_sentences_go_after_the_sentence_their_slot_names(monkeypatch):
    """Slot 0 is before the passage, slot ``k`` after its ``k``-th sentence; the key's slot is
    the row's ``position``; the passage text between them is kept verbatim. Numbers are drawn
    from 10000 to 99999, both included."""
    monkeypatch.setattr(
        tiny_sampling, "random", _rigged(["most", "least", 55555, 23456], [2, 0, "last", 1])
    )
    (row,) = build_passkey([Document("sotu", "d", "d", PASSAGE)], n=1, seed=0,
                           phrasing="standard")  # fmt: skip
    assert row["key"] == "99999" and row["position"] == 2
    assert sorted(row["choices"]) == ["10000", "23456", "55555", "99999"]
    assert row["choices"][row["gold"]] == "99999"
    key = PASSKEY_SENTENCE.format(key="99999")
    first, last, second = (_distractor(row["passage"], x) for x in ("10000", "55555", "23456"))
    assert row["passage"] == f"{first} {S1} {second} {S2} {key} {S3} {last}"
    assert row["prompt"] == row["passage"] + "\n" + PASSKEY_QUESTION
    assert (row["start"], row["end"]) == (0, len(PASSAGE))


def test_planted_sentences_sharing_a_slot_all_go_there(monkeypatch):
    """Planted sentences drawn for the same slot all go there."""
    monkeypatch.setattr(tiny_sampling, "random", _rigged([12345, 23456, 34567, 45678], [0] * 4))
    (row,) = build_passkey([Document("sotu", "d", "d", PASSAGE)], n=1, seed=0,
                           phrasing="standard")  # fmt: skip
    assert row["position"] == 0 and row["passage"].endswith(" " + PASSAGE)
    planted = row["passage"][: -len(PASSAGE) - 1]
    assert PASSKEY_SENTENCE.format(key="12345") in planted
    assert all(_distractor(planted, x) for x in ("23456", "34567", "45678"))


def test_a_number_already_drawn_is_drawn_again(monkeypatch):
    """The four choices are four different numbers: a repeated draw is drawn again."""
    monkeypatch.setattr(tiny_sampling, "random", _rigged([12345, 12345, 23456, 23456, 34567,
                                                          45678], [1, 1, 1, 1]))  # fmt: skip
    (row,) = build_passkey([Document("sotu", "d", "d", PASSAGE)], n=1, seed=0,
                           phrasing="standard")  # fmt: skip
    assert sorted(row["choices"]) == ["12345", "23456", "34567", "45678"]


def _head(chars: int) -> str:
    """A first sentence of 15 words ending ``chars`` characters before the passage's end."""
    body = "The " + " ".join(["clerk"] * 13) + " "
    return body + "q" * (chars - len(body) - 1 - len(f" {S2} {S3}")) + "."


def test_a_passage_may_have_exactly_420_characters():
    """A passage of 420 characters is taken; one of 421 is not."""
    text = f"{_head(420)} {S2} {S3}"
    assert len(text) == 420
    (row,) = build_passkey([Document("sotu", "d", "d", text)], n=1, seed=0)
    assert (row["start"], row["end"]) == (0, 420)
    longer = f"{_head(421)} {S2} {S3}"
    with pytest.raises(UserError, match="yields 0 passages"):
        build_passkey([Document("sotu", "d", "d", longer)], n=1, seed=0)


def test_a_passage_has_three_sentences_and_40_words_at_least():
    """Two sentences are too few, and 39 words are too few; 40 words in 3 sentences are enough."""
    two = f"{S1} {S2[:-1]}, and {S3[0].lower()}{S3[1:]}"  # 47 words in two sentences
    with pytest.raises(UserError, match="yields 0 passages"):
        build_passkey([Document("sotu", "d", "d", two)], n=1, seed=0)
    short = f"{S1} {S2} At the gate he stopped to rest and waited."  # 40 words
    assert len(short.split()) == 40
    assert len(build_passkey([Document("sotu", "d", "d", short)], n=1, seed=0)) == 1
    shorter = f"{S1} {S2} At the gate he stopped to rest there."  # 39 words
    with pytest.raises(UserError, match="yields 0 passages"):
        build_passkey([Document("sotu", "d", "d", shorter)], n=1, seed=0)


@pytest.mark.parametrize("phrasing", ["heldout", "train"])
def test_the_question_names_the_noun_of_the_key_sentence(phrasing):
    """With a phrasing family, the question asks for the noun that the key sentence uses."""
    family = PASSKEY_FAMILIES[phrasing]
    rows = build_passkey([Document("sotu", "d", "d", PASSAGE)], n=1, seed=3, phrasing=phrasing)
    (row,) = rows
    question = row["prompt"][len(row["passage"]) + 1 :]
    candidates = {q.format(noun=n) for q in family.questions for n in family.nouns}
    assert question in candidates and row["phrasing"] == phrasing
    noun = max((n for n in family.nouns if n in question), key=len)
    needles = {t.replace("{noun}", noun).format(key=row["key"]) for t in family.needles}
    assert any(needle in row["passage"] for needle in needles)
