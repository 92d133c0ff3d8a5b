"""Phrasing families of the NIAH prompts: the train and held-out families are disjoint from each
other and from RULER's strings (checked on the strings themselves), a held-out sample carries
none of RULER's wording, and RULER's own samples are unchanged."""

from __future__ import annotations

import random
import re
import string

import pytest

from longred_bench.errors import UserError
from longred_bench.models.zoo import byte_tokenizer
from longred_bench.taskdata.ruler import niah
from longred_bench.taskdata.ruler.phrasings import FAMILIES, PHRASINGS, draw
from longred_bench.taskdata.ruler.registry import generate

STANDARD = (niah.TEMPLATE, niah.ANSWER_PREFIX, niah.NEEDLE)


def _fixed_words(template: str) -> list[str]:
    """The fixed words of a template (fields and punctuation removed, lower case)."""
    text = re.sub(r"\{[a-z]+\}", " ", template).lower()
    return text.translate(str.maketrans("", "", string.punctuation)).split()


def _four_grams(templates: tuple[str, ...]) -> set[tuple[str, ...]]:
    grams = set()
    for template in templates:
        words = _fixed_words(template)
        grams.update(tuple(words[i : i + 4]) for i in range(len(words) - 3))
    return grams


def test_families_share_no_string_and_no_four_words() -> None:
    train, heldout = FAMILIES["train"].strings(), FAMILIES["heldout"].strings()
    assert set(train).isdisjoint(heldout)
    assert set(heldout).isdisjoint(STANDARD) and set(train).isdisjoint(STANDARD)
    assert _four_grams(train).isdisjoint(_four_grams(heldout))
    assert _four_grams(heldout).isdisjoint(_four_grams(STANDARD))
    assert _four_grams(train).isdisjoint(_four_grams(STANDARD))


def test_the_four_gram_check_can_fail() -> None:
    shared = _four_grams(("the secret number of {key}",)) & _four_grams(
        ("so the secret number of",)
    )
    assert shared == {("the", "secret", "number", "of")}


@pytest.mark.parametrize("name", ["train", "heldout"])
def test_every_string_has_the_fields_it_needs(name: str) -> None:
    family = FAMILIES[name]
    assert len(family.questions) >= 2 and len(family.answer_prefixes) >= 2
    assert all("{key}" in n and "{value}" in n for n in family.needles)
    assert all("{query}" in q for q in family.questions)
    drawn = {draw(name, random.Random(seed)) for seed in range(60)}
    assert len(drawn) > len(family.needles)  # combinations, not one fixed phrasing


@pytest.mark.parametrize("task", ["niah_single_1", "niah_multikey_2", "niah_multiquery"])
def test_heldout_samples_hold_no_ruler_wording_and_their_answers(task: str) -> None:
    tok = byte_tokenizer()
    samples = generate(task, tok, 512, 4, 0, phrasing="heldout")
    for sample in samples:
        assert "special magic" not in sample.input
        assert all(value in sample.input for value in sample.outputs)
        assert sample.metadata["phrasing"] == "heldout"
        trained = _four_grams(FAMILIES["train"].strings()) | _four_grams(STANDARD)
        assert not (_four_grams((sample.metadata["answer_prefix"],)) & trained)


def test_standard_samples_are_rulers_and_unchanged_by_the_option() -> None:
    tok = byte_tokenizer()
    default = generate("niah_single_2", tok, 512, 3, 0)
    explicit = generate("niah_single_2", tok, 512, 3, 0, phrasing="standard")
    assert default == explicit
    assert all("special magic" in s.input and "phrasing" not in s.metadata for s in default)


def test_phrasing_is_refused_for_tasks_without_families_and_unknown_names() -> None:
    with pytest.raises(UserError, match="for the NIAH tasks"):
        generate("vt", byte_tokenizer(), 512, 1, 0, phrasing="heldout")
    with pytest.raises(UserError, match="unknown phrasing 'casual'"):
        generate("niah_single_1", byte_tokenizer(), 512, 1, 0, phrasing="casual")
    assert PHRASINGS == ("standard", "train", "heldout")
