"""How the phrasing families are built and drawn: a family written as parts holds every
concatenation of one string from each part, in order; a draw without a random stream takes the
first string of each kind; the standard phrasing is refused as a family to draw from; and the
pass key's noun and the singular of each needle kind fill their strings."""

from __future__ import annotations

import random

import pytest

from longred_bench.errors import UserError
from longred_bench.taskdata.ruler.phrasings import (
    FAMILIES,
    PASSKEY_FAMILIES,
    SINGULAR,
    VT_FAMILIES,
    Phrasing,
    draw,
)


def test_a_family_written_as_parts_holds_every_combination_in_order() -> None:
    """The train instructions are each opener followed by each statement (5 x 7), the first
    being the bare statement, and the vt questions each lead-in followed by each question."""
    instructions = FAMILIES["train"].instructions
    assert len(instructions) == len(set(instructions)) == 35
    assert instructions[0] == "A few secret {kind} are tucked into it."
    assert (
        instructions[7]
        == "Read the passage below with care. A few secret {kind} are tucked into it."
    )
    assert instructions[-1] == "Attention, please. It contains a few {kind} worth remembering."
    questions = VT_FAMILIES["train"].questions
    assert (
        len(questions) == 12 and questions[4] == "Question: Which variables end up holding {value}?"
    )
    assert len(FAMILIES["train"].needles) == 40 and len(FAMILIES["train"].questions) == 40


def test_a_draw_without_a_stream_takes_the_first_string_of_each_kind() -> None:
    """``Family.draw(None)`` is the family's first instruction, question, prefix and needle."""
    family = FAMILIES["heldout"]
    assert family.draw(None) == Phrasing(
        family.instructions[0] + "\n{context}\n" + family.questions[0],
        family.answer_prefixes[0],
        family.needles[0],
    )


def test_the_standard_phrasing_is_not_drawn() -> None:
    """RULER's strings are fixed: drawing the standard phrasing is refused, as is an unknown
    family, each with a user error."""
    with pytest.raises(UserError, match="standard phrasing is RULER's fixed strings"):
        draw("standard", random.Random(0))
    with pytest.raises(UserError, match="unknown phrasing 'plain'"):
        draw("plain", random.Random(0))


def test_a_pass_key_draw_fills_the_noun_in_the_needle_and_the_question() -> None:
    """The needle keeps ``{key}`` for the key and names the drawn noun, as the question does."""
    for family in PASSKEY_FAMILIES.values():
        for seed in range(20):
            needle, question = family.draw(random.Random(seed))
            (noun,) = [n for n in family.nouns if n in needle]
            assert "{key}" in needle and "{noun}" not in needle
            assert noun in question and "{" not in question


def test_each_needle_kind_has_its_singular() -> None:
    """A needle of numbers, uuids or words speaks of one number, uuid or word."""
    assert SINGULAR == {"numbers": "number", "uuids": "uuid", "words": "word"}
