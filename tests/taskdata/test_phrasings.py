"""Phrasing families of the NIAH, variable-tracking and pass-key prompts: the train and held-out
families are disjoint from each other and from RULER's (or the tiny passkey task's) strings,
checked on the strings themselves; a held-out sample carries none of RULER's wording, and
RULER's own samples are unchanged."""

from __future__ import annotations

import random
import re
import string

import pytest
from data_helpers import ensure_cached

from longred_bench.errors import UserError
from longred_bench.models.zoo import byte_tokenizer
from longred_bench.taskdata.ruler import niah
from longred_bench.taskdata.ruler.phrasings import (
    FAMILIES,
    PASSKEY_FAMILIES,
    PHRASINGS,
    VT_FAMILIES,
    draw,
)
from longred_bench.taskdata.ruler.registry import generate
from longred_bench.taskdata.ruler.synthetic import VT_PREFIX, VT_TEMPLATE
from longred_bench.taskdata.tiny_tasks import PASSKEY_QUESTION, PASSKEY_SENTENCE

STANDARD = (niah.TEMPLATE, niah.ANSWER_PREFIX, niah.NEEDLE)
# Each kind of family with the fixed strings it replaces.
KINDS = {
    "niah": (FAMILIES, STANDARD),
    "vt": (VT_FAMILIES, (VT_TEMPLATE, VT_PREFIX)),
    "passkey": (PASSKEY_FAMILIES, (PASSKEY_SENTENCE, PASSKEY_QUESTION)),
}


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


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_families_share_no_string_and_no_four_words(kind: str) -> None:
    families, standard = KINDS[kind]
    train, heldout = families["train"].strings(), families["heldout"].strings()
    assert set(train).isdisjoint(heldout)
    assert set(heldout).isdisjoint(standard) and set(train).isdisjoint(standard)
    assert _four_grams(train).isdisjoint(_four_grams(heldout))
    assert _four_grams(heldout).isdisjoint(_four_grams(standard))
    assert _four_grams(train).isdisjoint(_four_grams(standard))


def test_passkey_families_differ_in_their_nouns() -> None:
    train, heldout = PASSKEY_FAMILIES["train"], PASSKEY_FAMILIES["heldout"]
    assert set(train.nouns).isdisjoint(heldout.nouns)
    assert all("pass key" not in noun for noun in (*train.nouns, *heldout.nouns))
    needle, question = heldout.draw(random.Random(0))
    assert "{key}" in needle and any(noun in question for noun in heldout.nouns)


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
def test_heldout_samples_hold_no_ruler_wording_and_their_answers(task: str, request) -> None:
    ensure_cached(request, "brown")  # the haystack
    tok = byte_tokenizer()
    samples = generate(task, tok, 512, 4, 0, phrasing="heldout")
    for sample in samples:
        assert "special magic" not in sample.input
        assert all(value in sample.input for value in sample.outputs)
        assert sample.metadata["phrasing"] == "heldout"
        trained = _four_grams(FAMILIES["train"].strings()) | _four_grams(STANDARD)
        assert not (_four_grams((sample.metadata["answer_prefix"],)) & trained)


def test_standard_samples_are_rulers_and_unchanged_by_the_option(request) -> None:
    ensure_cached(request, "brown")  # the haystack
    tok = byte_tokenizer()
    default = generate("niah_single_2", tok, 512, 3, 0)
    explicit = generate("niah_single_2", tok, 512, 3, 0, phrasing="standard")
    assert default == explicit
    assert all("special magic" in s.input and "phrasing" not in s.metadata for s in default)


def test_vt_heldout_samples_ask_in_the_heldout_family_and_standard_is_unchanged() -> None:
    tok = byte_tokenizer()
    heldout = generate("vt", tok, 512, 4, 0, phrasing="heldout")
    standard = generate("vt", tok, 512, 4, 0)
    questions = [q.split("{value}")[0] for q in VT_FAMILIES["heldout"].questions]
    for h, s in zip(heldout, standard, strict=True):
        assert "Memorize and track" not in h.input and "Memorize and track" in s.input
        assert any(q in h.input for q in questions)
        assert all(name in h.input for name in h.outputs)


def test_phrasing_is_refused_for_tasks_without_families_and_unknown_names() -> None:
    with pytest.raises(UserError, match="for the NIAH tasks and vt"):
        generate("cwe", byte_tokenizer(), 512, 1, 0, phrasing="heldout")
    with pytest.raises(UserError, match="unknown phrasing 'casual'"):
        generate("niah_single_1", byte_tokenizer(), 512, 1, 0, phrasing="casual")
    assert PHRASINGS == ("standard", "train", "heldout")


def test_eval_config_checks_the_phrasing_and_its_suite() -> None:
    from longred_bench.evaluation.config import EvalConfig

    assert EvalConfig(model="tiny-random", suite="ruler", phrasing="heldout").phrasing == "heldout"
    with pytest.raises(UserError, match="unknown phrasing 'plain'"):
        EvalConfig(model="tiny-random", suite="ruler", phrasing="plain")
    with pytest.raises(UserError, match="--phrasing is for the ruler and short_tiny suites"):
        EvalConfig(model="tiny-random", suite="niah", phrasing="heldout")


@pytest.mark.network
@pytest.mark.parametrize("phrasing", [None, "standard"])
def test_run_phrasing_reaches_the_passkey_task(
    request: pytest.FixtureRequest, phrasing: str | None
) -> None:
    from longred_bench.evaluation.harness import _metadata, task_manager
    from longred_bench.taskdata.tiny_tasks import PASSKEY_QUESTION

    ensure_cached(request, "sotu")  # the tiny tasks' source
    manager = task_manager(_metadata("tiny-random", phrasing=phrasing))
    task = manager.load(["longred_tiny_passkey"])["tasks"]["longred_tiny_passkey"]
    prompts = [task.doc_to_text(doc) for doc in list(task.test_docs())[:20]]
    asks_pass_key = [p.endswith("\n" + PASSKEY_QUESTION) for p in prompts]
    assert all(asks_pass_key) if phrasing == "standard" else not any(asks_pass_key)
