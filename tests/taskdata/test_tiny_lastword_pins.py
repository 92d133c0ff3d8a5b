"""The tiny ``lastword`` task's rules on documents written for the purpose: the longest
passage it takes, that a passage has two sentences or more and ends in a content word, and
what a row's context, target and choices are."""

from __future__ import annotations

import pytest

from longred_bench.data.corpora import Document
from longred_bench.errors import UserError
from longred_bench.taskdata.tiny_lastword import _MAX_CHARS, build_lastword

# Four words seen equally often in the documents (the passage adds one "garden"): each is in
# the others' frequency band, so "garden" has three stand-ins that the passage does not hold.
VOCABULARY = "\n\ngarden river valley meadow garden river valley meadow " * 2
LAST = "It was in the garden."


def _passage(chars: int, last: str = LAST) -> str:
    """Two sentences, 41 words in all, ending with ``last``, ``chars`` characters long."""
    head = "The " + " ".join(["stone"] * 34) + " "
    pad = chars - len(head) - len(". ") - len(last)
    return head + "q" * pad + ". " + last


def _documents(passage: str) -> list[Document]:
    return [Document("sotu", "d1", "d1", passage + VOCABULARY)]


def test_a_row_is_the_passage_up_to_its_last_word_and_four_choices():
    """Context and target rebuild the passage; the choices: the target and its 3 stand-ins."""
    passage = _passage(300)
    (row,) = build_lastword(_documents(passage), n=1, seed=0)
    assert row["target"] == "garden"
    assert row["context"] == passage[: -len(" garden.")]
    assert row["context"] + " " + row["target"] + "." == passage
    assert sorted(row["choices"]) == ["garden", "meadow", "river", "valley"]
    assert row["choices"][row["gold"]] == "garden"
    assert (row["start"], row["end"]) == (0, len(passage))


def test_a_passage_may_have_exactly_the_most_characters_allowed():
    """A passage of 600 characters is taken; one of 601 is not."""
    assert _MAX_CHARS == 600
    (row,) = build_lastword(_documents(_passage(600)), n=1, seed=0)
    assert row["end"] - row["start"] == 600
    with pytest.raises(UserError, match="yields 0 passages"):
        build_lastword(_documents(_passage(601)), n=1, seed=0)


def test_a_passage_has_two_sentences_at_least():
    """A single sentence of enough words is not a passage."""
    one = "The " + " ".join(["stone"] * 34) + " in the garden."  # 38 words, one sentence
    with pytest.raises(UserError, match="yields 0 passages"):
        build_lastword(_documents(one), n=1, seed=0)


@pytest.mark.parametrize(
    "last", ["It was in the Garden.", "It was in the garden there.", "It was by the sea."]
)
def test_a_passage_must_end_in_a_lowercase_content_word(last):
    """A capitalised word, a function word or one under 3 letters is not asked for."""
    with pytest.raises(UserError, match="yields 0 passages"):
        build_lastword(_documents(_passage(300, last)), n=1, seed=0)


def test_closing_quotes_and_brackets_after_the_last_word_are_dropped_with_it():
    """Punctuation, quotes and brackets after the last word are not part of the context."""
    passage = _passage(300, 'It was in the garden!")')
    (row,) = build_lastword(_documents(passage), n=1, seed=0)
    assert row["target"] == "garden"
    assert row["context"] == passage[: -len(' garden!")')]


def test_a_stand_in_the_passage_already_holds_is_not_offered():
    """ "river" occurs in the passage: "garden" has two stand-ins left, too few for a row."""
    passage = _passage(300, "It was by the river garden.")
    with pytest.raises(UserError, match="yields 0 passages"):
        build_lastword(_documents(passage), n=1, seed=0)
