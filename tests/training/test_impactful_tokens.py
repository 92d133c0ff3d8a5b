"""LongRecipe's impactful-token analysis and sentence selection
(``training/impactful_tokens.py``)."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
import torch

from longred_bench.models.loading import extend, load
from longred_bench.models.zoo import byte_tokenizer
from longred_bench.training.anchors import brief_rows
from longred_bench.training.impactful_tokens import (
    WORD_TYPES,
    logit_change,
    measured_anchors,
    select_sentences,
    type_shares,
    word_type,
)


@pytest.mark.parametrize(
    "text,kind",
    [
        (" 1987", "numeral"), ("seven", "numeral"), (" She", "pronoun"), ("was", "auxiliary"),
        (" and", "conjunction"), (" of", "adposition"), (" The", "determiner"),
        (".", "punctuation"), (" river", "other"), ("  ", "other"), ("4th", "numeral"),
    ],
)  # fmt: skip
def test_word_types(text: str, kind: str) -> None:
    assert word_type(text) == kind and kind in WORD_TYPES


def test_logit_change_is_zero_for_the_same_model_and_matches_the_logits() -> None:
    model = load("tiny-random").model.eval()
    ids = torch.randint(0, 256, (2, 24), generator=torch.Generator().manual_seed(0))
    assert torch.equal(logit_change(model, model, ids), torch.zeros(2, 24))
    extended = extend(model, "abf:theta=1e7").eval()
    change = logit_change(model, extended, ids)
    assert change.shape == (2, 24) and bool((change[:, 0] == 0).all())
    with torch.no_grad():
        a, b = model(ids).logits, extended(ids).logits
    t = 10
    expected = b[1, t - 1, ids[1, t]] - a[1, t - 1, ids[1, t]]
    assert float(change[1, t]) == pytest.approx(float(expected), abs=1e-5)
    assert float(change.abs().sum()) > 0


def test_type_shares_count_the_top_tokens_at_each_position() -> None:
    tok = byte_tokenizer()
    digit, letter = tok.convert_tokens_to_ids("7"), tok.convert_tokens_to_ids("x")
    ids = torch.full((10, 6), letter)
    ids[:2] = digit  # 2 of 10 rows are digits, and they change most
    change = torch.zeros(10, 6)
    change[:2] = 5.0
    shares = type_shares(change, ids, tok, top_fraction=0.2)
    assert shares["numeral"] == 1.0 and sum(shares.values()) == pytest.approx(1.0)
    shares = type_shares(change, ids, tok, top_fraction=0.4)
    assert shares["numeral"] == pytest.approx(0.5) and shares["other"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="top_fraction"):
        type_shares(change, ids, tok, top_fraction=0.0)


def test_select_sentences_keeps_anchors_and_samples_the_rest() -> None:
    sentences = [
        f"In {1800 + i} it rained." if i % 2 else "It rained all day." for i in range(2000)
    ]
    kept = select_sentences(sentences, ["numeral"], 0.25, random.Random(0))
    with_digit = [s for s in kept if any(c.isdigit() for c in s)]
    assert len(with_digit) == 1000  # every anchored sentence
    assert 200 < len(kept) - 1000 < 300  # about a quarter of the others
    assert select_sentences(sentences, ["numeral"], 0.0, random.Random(0)) == sentences[1::2]
    words = ["It rained for seven days.", "It rained.", "In 1801 it rained."]
    assert select_sentences(words, ["digit"], 0.0, random.Random(0)) == words[2:]
    assert select_sentences(words, ["numeral"], 0.0, random.Random(0)) == [words[0], words[2]]
    with pytest.raises(ValueError, match="unknown anchor"):
        select_sentences(sentences, ["noun"], 0.5, random.Random(0))


def test_measured_anchors_are_the_types_lifted_most_largest_first() -> None:
    lifts = {"numeral": 3.0, "pronoun": 1.5, "auxiliary": 2.0, "conjunction": 0.5,
             "adposition": 1.2, "determiner": 1.0, "punctuation": 9.0, "other": 8.0}  # fmt: skip
    assert measured_anchors(lifts) == ("numeral", "auxiliary", "pronoun")
    # only the four above 1, never punctuation or other however lifted
    assert measured_anchors(lifts, k=5) == ("numeral", "auxiliary", "pronoun", "adposition")


def test_the_brief_runs_rows_round_up_to_the_processes() -> None:
    five = SimpleNamespace(tokens_per_step=5 * 1024, mix={"long": 1.0})  # 5 rows of 1,024
    assert [brief_rows(five, 1024, world=w) for w in (1, 2, 4)] == [5, 6, 8]
    half = SimpleNamespace(tokens_per_step=10 * 1024, mix={"long": 0.5})  # the long share: 5
    assert brief_rows(half, 1024, world=3) == 6
