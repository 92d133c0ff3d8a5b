"""Phrasing families of the needle-in-a-haystack prompts: besides RULER's own strings
(``standard``, in :mod:`longred_bench.taskdata.ruler.niah`), a ``train`` family for pretraining
and CPT rows and a ``heldout`` family that no training row uses, so a retrieval score in
held-out phrasing measures retrieval rather than a memorised format.

A phrasing is four strings: the instruction before the context, the question after it, the answer
prefix the model continues, and the needle sentence. The ``train`` and ``heldout`` families hold
several of each, written for this suite; a sample draws one of each from its own random stream,
so question forms, answer prefixes and needle sentences vary combinatorially. Fields: ``{kind}``
(plural: numbers, uuids, words), ``{one}`` (singular), ``{key}``, ``{value}``, ``{query}``,
``{context}``. The two families share no template and no run of four words of fixed text with
each other or with RULER's strings (checked by the tests).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from longred_bench.errors import UserError

SINGULAR = {"numbers": "number", "uuids": "uuid", "words": "word"}


@dataclass(frozen=True)
class Phrasing:
    """One drawn phrasing: ``template`` holds ``{context}`` between instruction and question."""

    template: str
    answer_prefix: str
    needle: str


@dataclass(frozen=True)
class Family:
    """The strings a phrasing is drawn from."""

    instructions: tuple[str, ...]
    questions: tuple[str, ...]
    answer_prefixes: tuple[str, ...]
    needles: tuple[str, ...]

    def draw(self, rng: random.Random | None) -> Phrasing:
        """One of each kind of string (the first of each without ``rng``)."""

        def pick(options: tuple[str, ...]) -> str:
            return options[0] if rng is None else rng.choice(options)

        instruction, question = pick(self.instructions), pick(self.questions)
        return Phrasing(instruction + "\n{context}\n" + question, pick(self.answer_prefixes),
                        pick(self.needles))  # fmt: skip

    def strings(self) -> tuple[str, ...]:
        """Every template string of the family."""
        return (*self.instructions, *self.questions, *self.answer_prefixes, *self.needles)


FAMILIES: dict[str, Family] = {
    "train": Family(
        instructions=(
            "Read the passage below with care; a few secret {kind} are tucked into it.",
            "The document that follows conceals some {kind}. Keep track of them.",
            "Hidden {kind} appear somewhere in this text, so pay attention.",
        ),
        questions=(
            "Which {kind} belong to {query}?",
            "Tell me the {kind} that were given for {query}.",
            "Name each {one} linked to {query} in the passage.",
        ),
        answer_prefixes=(
            " The {kind} for {query} are",
            " Answer:",
            " Those {kind} were",
        ),
        needles=(
            "Remember this: the secret {one} of {key} is {value}.",
            "{key} is tied to the {one} {value}.",
            "Record for {key}: {value}.",
        ),
    ),
    "heldout": Family(
        instructions=(
            "Somewhere inside this material a handful of {kind} have been concealed; find them.",
            "Look through everything below, since certain {kind} are buried there.",
        ),
        questions=(
            "List every {one} associated with {query}.",
            "Which values go with {query}, according to the material?",
        ),
        answer_prefixes=(
            " Here they are:",
            " Reply:",
        ),
        needles=(
            "Keep in mind that {value} goes with {key}.",
            "Ledger entry, {key} -> {value}.",
        ),
    ),
}
PHRASINGS: tuple[str, ...] = ("standard", *FAMILIES)


def check_phrasing(name: str) -> None:
    """Raise :class:`UserError` for an unknown phrasing family."""
    if name not in PHRASINGS:
        raise UserError(f"unknown phrasing {name!r}; phrasings: {', '.join(PHRASINGS)}")


def draw(name: str, rng: random.Random) -> Phrasing:
    """One string of each kind of family ``name`` (``train`` or ``heldout``), drawn with ``rng``
    (RULER's ``standard`` strings are :data:`longred_bench.taskdata.ruler.niah.STANDARD`)."""
    check_phrasing(name)
    if name == "standard":
        raise UserError("the standard phrasing is RULER's fixed strings (niah.STANDARD), not drawn")
    return FAMILIES[name].draw(rng)
