"""RULER haystack material on small inputs (unit tier; a made-up corpus stands in for the
cached prose): noise sentences, essay words, the key vocabulary and the needle values."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from longred_bench.taskdata.ruler import haystack


@pytest.fixture
def corpus(monkeypatch: pytest.MonkeyPatch) -> tuple[str, ...]:
    """Three documents' words, the second starting at word 4."""
    words = ("The", "cat", "sat.", "Then", "a", "dog", "ran", "an", "Ox", "ab", "y" * 13, "zebra")
    monkeypatch.setattr(haystack, "_corpus_in", lambda name, cache: (words, (0, 3, 7)))
    return words


def test_noise_cycles_through_rulers_five_sentences() -> None:
    assert haystack.noise_units(7) == [*haystack.NOISE_SENTENCES, *haystack.NOISE_SENTENCES[:2]]
    assert haystack.noise_sequence(6, " ")[5] == " The grass is green."


def test_essay_words_start_at_a_document_and_wrap_around(corpus) -> None:
    """An essay is consecutive words from the start of a drawn document, continuing from the
    first word of the corpus past its end; every document can be drawn."""
    starts = set()
    for seed in range(30):
        units = haystack.essay_units("any", random.Random(seed), 20)
        start = corpus.index(units[0])
        assert start in (0, 3, 7)
        starts.add(start)
        assert units == [corpus[(start + k) % len(corpus)] for k in range(20)]
    assert starts == {0, 3, 7}


def test_the_vocabulary_is_the_lowercase_words_of_3_to_12_letters(corpus) -> None:
    vocabulary = haystack._vocabulary_in.__wrapped__  # not the memo of another test's corpus
    assert vocabulary("any", Path("cache")) == ("cat", "dog", "ran", "zebra")


def test_needle_numbers_have_seven_digits() -> None:
    rng = random.Random(0)
    values = [haystack.number_value(rng) for _ in range(500)]
    assert all(re.fullmatch(r"[1-9]\d{6}", v) for v in values)
    assert len(set(values)) == 500


def test_needle_depths_are_distinct_points_of_the_grid_both_ends_included() -> None:
    rng = random.Random(0)
    assert haystack.random_depths(rng, 40) == [100.0 * i / 39 for i in range(40)]
    depths = haystack.random_depths(rng, 5)
    assert depths == sorted(depths) and len(set(depths)) == 5


def test_an_item_goes_in_at_the_nearest_unit_boundary() -> None:
    units = list("abcdefghij")
    assert haystack.insert_at_depths(units, ["X"], [38]) == [*"abcd", "X", *"efghij"]
    assert haystack.insert_at_depths(units, ["X", "Y"], [100, 0]) == ["Y", *units, "X"]


def test_snapping_moves_back_to_a_sentence_end_only_within_reach() -> None:
    """An essay needle moves back to just after the nearest sentence end within 200 words, or
    to the haystack's start where that is the nearest boundary; a sentence end further back
    leaves it where it is."""
    far = ["Start.", *["w"] * 499]
    assert haystack.insert_at_depths(far, ["X"], [100], snap=True)[-1] == "X"
    near = ["w"] * 50
    assert haystack.insert_at_depths(near, ["X"], [50], snap=True)[0] == "X"
    ended = [*["w"] * 9, "end.", *["w"] * 30]
    assert haystack.insert_at_depths(ended, ["X"], [50], snap=True).index("X") == 10


def test_zipf_ranks_reach_the_last_of_the_support_and_beyond() -> None:
    """Every rank of the support is drawn, the last one included; ranks past it come back as
    0."""
    draw = haystack.zipf_sampler(random.Random(0), 3, 2.0)
    ranks = draw(3000)
    assert set(ranks) == {0, 1, 2, 3}
    assert ranks.count(1) > ranks.count(2) > ranks.count(3)


def test_joined_parts_are_the_prompt_with_one_separator_between_items() -> None:
    """The parts join to ``before``, the units and items separated by one separator each, and
    ``after``, the units whole among the parts."""
    parts = haystack.joined_parts("Q:\n", [" a", " b", " c"], ["X"], [50], "\nA:", separator=" ")
    assert "".join(parts) == "Q:\na b X c\nA:"
    assert parts == ("Q:\na", " b", " X", " c", "\nA:")
    assert haystack.joined_parts("Q:", [], [], [], " A:", separator="\n") == ("Q: A:",)
