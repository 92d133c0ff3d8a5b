"""Words as the tiny tasks see them: runs of ASCII letters, and the function words that no task
picks as a cloze target or a word to replace."""

from __future__ import annotations

import re


def _word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


FUNCTION_WORDS = _word_set(
    "the and but for nor yet not all any are was were has had have his her him its our their "
    "them they she you your who whom whose which what when where why how this that these those "
    "than then there here with from into onto upon over under about after before again also "
    "been being very much more most some such only own same can could will would shall should "
    "may might must did does doing done one ones out off too now just each few both other"
)
WORD = re.compile(r"[A-Za-z]+")
