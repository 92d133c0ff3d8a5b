"""Rules of the tiny tasks' builders on small documents and sentences written for the purpose
(unit tier): what a passkey passage may hold, which word a ``replace`` pair may change."""

from __future__ import annotations

import random
import types

import pytest

from longred_bench.data.corpora import Document
from longred_bench.taskdata import tiny_sampling
from longred_bench.taskdata.ruler.phrasings import PASSKEY_FAMILIES
from longred_bench.taskdata.tiny_passkey import PASSKEY_SENTENCE, build_passkey

TEXT_NUMBER = "12345"


def _numbered_document() -> Document:
    """Paragraphs of short sentences, every third of which quotes the number ``12345``."""
    sentences = []
    for i in range(60):
        if i % 3 == 0:
            sentences.append(f"The clerk wrote {TEXT_NUMBER} on ledger page {i} today.")
        else:
            sentences.append(f"A quiet visitor crossed the square near the old mill {i} times.")
    paragraphs = [" ".join(sentences[k : k + 6]) for k in range(0, 60, 6)]
    return Document("sotu", "d1", "d1", "\n\n".join(paragraphs))


class _FirstDrawsInText(random.Random):
    """A generator whose first 5-digit draws are the number the text already holds."""

    def __init__(self, seed: object = None) -> None:
        super().__init__(seed)
        self.rigged = 3

    def randint(self, a: int, b: int) -> int:
        if (a, b) == (10000, 99999) and self.rigged:
            self.rigged -= 1
            return int(TEXT_NUMBER)
        return super().randint(a, b)


def test_passkey_choices_are_numbers_the_passage_did_not_hold(monkeypatch) -> None:
    """A drawn number that already occurs in the passage is drawn again, so the key and the
    other choices each occur in the built passage only where they were planted."""
    monkeypatch.setattr(tiny_sampling, "random", types.SimpleNamespace(Random=_FirstDrawsInText))
    rows = build_passkey([_numbered_document()], n=4, seed=0, phrasing="standard")
    assert len(rows) == 4
    for row in rows:
        assert TEXT_NUMBER not in row["choices"]
        for number in row["choices"]:
            assert row["passage"].count(number) == 1
    assert any(TEXT_NUMBER in row["passage"] for row in rows)


@pytest.mark.parametrize("phrasing", ["standard", "heldout", "train"])
def test_passkey_distractors_come_from_the_family_the_phrasing_names(phrasing: str) -> None:
    """The other choices are planted with the named family's distractor sentences; the
    ``standard`` strings take the held-out family's."""
    family = PASSKEY_FAMILIES["heldout" if phrasing == "standard" else phrasing]
    rows = build_passkey([_numbered_document()], n=6, seed=1, phrasing=phrasing)
    for row in rows:
        others = [c for c in row["choices"] if c != row["key"]]
        for number in others:
            planted = [d.format(number=number) for d in family.distractors]
            assert any(sentence in row["passage"] for sentence in planted), number
    if phrasing == "standard":
        assert all(PASSKEY_SENTENCE.format(key=row["key"]) in row["passage"] for row in rows)


def test_replace_never_changes_the_first_word() -> None:
    """A sentence whose only replaceable content word is its first has no ``replace`` pair;
    elsewhere the word is put in place of another content word."""
    from longred_bench.taskdata.tiny_pairs import _replace

    vocab = {"river": ["valley"], "valley": ["river"], "meadow": ["orchard"]}
    rng = random.Random(0)
    assert _replace("river and the other one.", rng, vocab) is None
    assert _replace("river and the meadow.", rng, vocab) == "river and the orchard."


def test_nextsent_choices_are_four_different_passages() -> None:
    """Where a document repeats a passage word for word, the repeat is not offered as another
    choice beside the true context: the four contexts of a row differ as text."""
    from longred_bench.taskdata.tiny_nextsent import build_nextsent

    sentences = [
        f"The walker number {k} went {'very ' * (k % 6)}far along the quiet road today."
        for k in range(20)
    ]
    doc = Document("sotu", "d2", "d2", " ".join(sentences * 3))
    rows = build_nextsent([doc], n=12, seed=0)
    assert len(rows) == 12
    for row in rows:
        texts = [" ".join(context.split()) for context in row["contexts"]]
        assert len(set(texts)) == 4, texts
