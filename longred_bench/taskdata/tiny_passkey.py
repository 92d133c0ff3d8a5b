"""The tiny ``passkey`` task: find the key among four numbers planted in a passage.

A passage of 40-90 words (3+ sentences, at most 420 characters, so that the prompt fits a
256-token window) with a key sentence (a 5-digit key) and three sentences that plant the other
three choices, 5-digit numbers too, each inserted at a seeded sentence boundary, then a
question about the key; ``choices`` are the key and those three numbers, shuffled; ``gold``
indexes the key. Every choice occurs in the passage, so only the question's noun tells the key
apart. ``phrasing`` picks the strings: ``heldout`` (the default; a family no training row uses,
:data:`longred_bench.taskdata.ruler.phrasings.PASSKEY_FAMILIES`, drawn per row), ``train`` (the
family pretraining uses) or ``standard`` (``"The pass key is NNNNN. Remember it."`` and ``"What
is the pass key? The pass key is"``, with the held-out family's distractor sentences).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from longred_bench.data.corpora import Document
from longred_bench.data.sentences import Sentence
from longred_bench.taskdata.ruler.phrasings import PASSKEY_FAMILIES, check_phrasing
from longred_bench.taskdata.tiny_sampling import (
    DEFAULT_N,
    DEFAULT_SEED,
    NUM_CHOICES,
    Candidate,
    provenance,
    sample_rows,
)

PASSKEY_QUESTION = "What is the pass key? The pass key is"
PASSKEY_SENTENCE = "The pass key is {key}. Remember it."
DEFAULT_PASSKEY_PHRASING = "heldout"

_PASSKEY_WORDS = (40, 90)
_MAX_CHARS = 420  # the passage before anything is inserted, at most


def passkey_prompt(rng: random.Random, phrasing: str) -> tuple[str, str]:
    """``(key sentence with {key}, question)``: the task's first strings (``standard``) or a pair
    drawn from the family ``phrasing`` with ``rng``."""
    if phrasing == "standard":
        return PASSKEY_SENTENCE, PASSKEY_QUESTION
    return PASSKEY_FAMILIES[phrasing].draw(rng)


def build_passkey(
    documents: Sequence[Document],
    n: int = DEFAULT_N,
    seed: int = DEFAULT_SEED,
    *,
    phrasing: str = DEFAULT_PASSKEY_PHRASING,
) -> list[dict[str, Any]]:
    """Passkey rows: ``passage`` (key and distractor sentences inserted), ``prompt`` (passage +
    question), ``key``, ``position`` (sentences before the key), ``choices`` (all in the
    passage), ``gold``, ``phrasing``."""
    check_phrasing(phrasing)
    family = PASSKEY_FAMILIES["heldout" if phrasing == "standard" else phrasing]

    def build(candidate: Candidate, rng: random.Random) -> dict[str, Any]:
        doc, sentences, i, j = candidate
        start, end = sentences[i].start, sentences[j - 1].end
        original = doc.text[start:end]
        numbers: list[str] = []
        while len(numbers) < NUM_CHOICES:
            number = str(rng.randint(10000, 99999))
            if number not in original and number not in numbers:
                numbers.append(number)
        key = numbers[0]
        needle, question = passkey_prompt(rng, phrasing)
        planted = [needle.format(key=key)]
        planted += [rng.choice(family.distractors).format(number=x) for x in numbers[1:]]
        # Each planted sentence goes after sentence i + slot - 1 (slot 0: before the passage);
        # ties keep the drawn order, so the key is not always first.
        slots = [rng.randint(0, j - i) for _ in planted]
        order = sorted(range(len(planted)), key=lambda k: (slots[k], rng.random()))
        pieces, cursor = [], start
        for k in order:
            cut = start if slots[k] == 0 else sentences[i + slots[k] - 1].end
            pieces.append(doc.text[cursor:cut])
            pieces.append((" " if cut > start else "") + planted[k] + (" " if cut == start else ""))
            cursor = cut
        pieces.append(doc.text[cursor:end])
        passage = "".join(pieces)
        choices = list(numbers)
        rng.shuffle(choices)
        return {
            **provenance(doc, sentences, i, j),
            "passage": passage,
            "prompt": passage + "\n" + question,
            "key": key,
            "position": slots[0],
            "choices": choices,
            "gold": choices.index(key),
            "phrasing": phrasing,
        }

    def accept(doc: Document, sentences: list[Sentence], i: int, j: int) -> bool:
        return j - i >= 3 and sentences[j - 1].end - sentences[i].start <= _MAX_CHARS

    return sample_rows("passkey", documents, n, seed, _PASSKEY_WORDS, accept, build)
