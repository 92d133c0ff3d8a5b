"""Phrasing families of the needle-in-a-haystack prompts: besides RULER's own strings
(``standard``, in :mod:`longred_bench.taskdata.ruler.niah`), a ``train`` family for pretraining
and CPT rows and a ``heldout`` family that no training row uses, so a retrieval score in
held-out phrasing measures retrieval rather than a memorised format.

A NIAH phrasing is four strings: the instruction before the context, the question after it, the
answer prefix the model continues, and the needle sentence. The ``train`` and ``heldout`` families
hold several of each, written for this suite; a sample draws one of each from its own random
stream, so question forms, answer prefixes and needle sentences vary combinatorially. Fields:
``{kind}`` (plural: numbers, uuids, words), ``{one}`` (singular), ``{key}``, ``{value}``,
``{query}``, ``{context}``. Variable tracking (:data:`VT_FAMILIES`) and the pass key of the tiny
tasks and of pretraining (:data:`PASSKEY_FAMILIES`) have families of their own. The two families of
a kind share no template and no run of four words of fixed text with each other or with the
standard strings (checked by the tests).
"""

from __future__ import annotations

import itertools
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


def _compose(*parts: tuple[str, ...]) -> tuple[str, ...]:
    """Every concatenation of one string from each part, in order (a family written as parts
    grows combinatorially, so no single wording is worth memorising)."""
    return tuple("".join(combo) for combo in itertools.product(*parts))


FAMILIES: dict[str, Family] = {
    "train": Family(
        instructions=_compose(
            (
                "",
                "Read the passage below with care. ",
                "This is a memory exercise. ",
                "Here is some text to study. ",
                "Attention, please. ",
            ),
            (
                "A few secret {kind} are tucked into it.",
                "The document that follows conceals some {kind}. Keep track of them.",
                "Hidden {kind} appear somewhere in this text, so pay attention.",
                "Some {kind} were slipped into it; note each one.",
                "You will be asked about its {kind}.",
                "Certain {kind} are scattered through the writing.",
                "It contains a few {kind} worth remembering.",
            ),
        ),
        questions=_compose(
            ("", "Now, ", "Question: ", "One more thing. ", "Think back. "),
            (
                "Which {kind} belong to {query}?",
                "Tell me the {kind} that were given for {query}.",
                "Name each {one} linked to {query} in the passage.",
                "What did the text say about {query}?",
                "Recall the {kind} attached to {query}.",
                "Give the {kind} stated for {query}.",
                "Find {query} in the text and report its {kind}.",
                "What {kind} went with {query}?",
            ),
        ),
        answer_prefixes=(
            " The {kind} for {query} are",
            " Answer:",
            " Those {kind} were",
            " Found:",
            " The text gives",
            " Result:",
            " It says",
            " Output:",
            " My answer is",
            " Response:",
            " The {one} is",
            " A:",
            # Prefixes that restate the key and end on "is"/"are", so the model learns that a
            # value, not a needle sentence, follows "<key> ... is" in an answer.
            " The {one} for {query} is",
            " For {query}, the {one} is",
            " The {one} that goes with {query} is",
            " The {one} which the text gives for {query} is",
            " What {query} holds is",
            " The {kind} listed under {query} are",
        ),
        needles=_compose(
            ("", "Remember this: ", "Note: ", "For the record: ", "Important: "),
            (
                "The secret {one} of {key} is {value}.",
                "{key} is tied to the {one} {value}.",
                "{key} has the {one} {value}.",
                "{value} is the {one} stored under {key}.",
                "The {one} {value} belongs to {key}.",
                "{value} was assigned to {key}.",
                "{key} maps to {value}.",
                "Under {key} we wrote {value}.",
            ),
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


@dataclass(frozen=True)
class VtFamily:
    """Variable-tracking prompts (RULER's ``vt``): the statements ``VAR X = ...`` are the task's
    data and stay; the instruction, question (``{value}``) and answer prefix (``{value}``,
    ``{count}``) vary."""

    instructions: tuple[str, ...]
    questions: tuple[str, ...]
    answer_prefixes: tuple[str, ...]

    def draw(self, rng: random.Random) -> tuple[str, str]:
        """``(template, answer_prefix)``; the template holds ``{context}`` and ``{value}``."""
        template = rng.choice(self.instructions) + "\n{context}\n" + rng.choice(self.questions)
        return template, rng.choice(self.answer_prefixes)

    def strings(self) -> tuple[str, ...]:
        return (*self.instructions, *self.questions, *self.answer_prefixes)


VT_FAMILIES: dict[str, VtFamily] = {
    "train": VtFamily(
        instructions=_compose(
            ("", "This is a tracing exercise. ", "Read carefully. "),
            (
                "Follow the variable assignments that appear in the text below.",
                "The text below hides statements that copy values between variables; keep track.",
                "Trace every chain of VAR statements in this passage.",
                "Some lines below set one variable from another. Keep a tally.",
            ),
        ),
        questions=_compose(
            ("", "Question: ", "Now, "),
            (
                "Which variables end up holding {value}?",
                "Name all variables whose value is {value}.",
                "Which variables equal {value} once every statement is applied?",
                "What variables were given {value}, directly or through others?",
            ),
        ),
        answer_prefixes=(
            " The variables equal to {value} are:",
            " Answer:",
            " Variables:",
            " Result:",
            " They number {count}:",
            " Output:",
        ),
    ),
    "heldout": VtFamily(
        instructions=(
            "Assignments between named variables are spread across the following material; "
            "work out where each value flows.",
            "Inside the material below, values get passed from one variable to another.",
        ),
        questions=(
            "Determine every variable that ends up carrying {value}.",
            "List the variables that hold {value} by the end.",
        ),
        answer_prefixes=(
            " Reply:",
            " In total {count} of them:",
        ),
    ),
}


@dataclass(frozen=True)
class PasskeyFamily:
    """Pass-key prompts: a ``noun`` for the key, the sentence that states it (``{noun}``,
    ``{key}``), the question after the passage (``{noun}``; the model continues with the key),
    and sentences that plant other numbers (``{number}``) as distractors."""

    nouns: tuple[str, ...]
    needles: tuple[str, ...]
    questions: tuple[str, ...]
    distractors: tuple[str, ...]

    def draw(self, rng: random.Random) -> tuple[str, str]:
        """``(needle, question)`` with ``{key}`` left in the needle."""
        noun = rng.choice(self.nouns)
        needle = rng.choice(self.needles).replace("{noun}", noun)
        return needle, rng.choice(self.questions).format(noun=noun)

    def strings(self) -> tuple[str, ...]:
        return (*self.needles, *self.questions, *self.distractors)


PASSKEY_FAMILIES: dict[str, PasskeyFamily] = {
    "train": PasskeyFamily(
        nouns=(
            "access code",
            "secret number",
            "door code",
            "vault code",
            "entry code",
            "account number",
            "ticket number",
            "alarm code",
        ),
        needles=(
            "Keep this {noun} in mind: {key}.",
            "Your {noun} is {key}.",
            "Note down the {noun} {key}.",
            "Remember that the {noun} is {key}.",
            "The {noun} for today: {key}.",
            "{key} is the {noun}.",
        ),
        questions=(
            "What is your {noun}? It is",
            "Which {noun} were you given? The {noun} is",
            "Say the {noun} once more:",
            "Write the {noun} here:",
            "Question: the {noun}? Answer:",
            "The {noun} was",
        ),
        distractors=(
            "A parcel numbered {number} arrived that morning.",
            "Room {number} was already taken.",
            "The receipt showed the total {number}.",
            "The phone rang from extension {number}.",
            "His badge read {number}.",
        ),
    ),
    "heldout": PasskeyFamily(
        nouns=("locker combination", "security pin"),
        needles=(
            "Here is a {noun} to retain: {key}.",
            "The {noun} you need is {key}; do not lose it.",
        ),
        questions=(
            "Recall the {noun} mentioned above. It was",
            "State the {noun}. Reply:",
        ),
        distractors=(
            "Order {number} had been shipped the day before.",
            "Someone had scribbled {number} in the margin.",
            "The bus on route {number} ran past the house.",
        ),
    ),
}


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
