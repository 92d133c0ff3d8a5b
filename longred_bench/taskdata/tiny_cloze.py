"""The tiny ``cloze`` task (LAMBADA-style last word).

A passage of 40-110 words whose last sentence ends in a word of at least 3 letters, not a
function word, that already occurs in the passage (so the word is predictable from the context,
as in LAMBADA). ``context`` is the passage up to that word, ``target`` is the word with a leading
space; the final punctuation is dropped.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any

from longred_bench.data.corpora import Document
from longred_bench.data.sentences import Sentence
from longred_bench.taskdata.tiny_sampling import (
    DEFAULT_N,
    DEFAULT_SEED,
    Candidate,
    provenance,
    sample_rows,
)
from longred_bench.taskdata.tiny_words import FUNCTION_WORDS, WORD

_CLOZE_WORDS = (40, 110)
_LAST_WORD = re.compile(r" ([A-Za-z]+)[.!?]+[\"'’”)\]]*$")


def _cloze_word(doc: Document, sentences: list[Sentence], i: int, j: int) -> str | None:
    """The passage's last word when it qualifies as a cloze target, else ``None``."""
    passage = doc.text[sentences[i].start : sentences[j - 1].end]
    match = _LAST_WORD.search(passage)
    if match is None:
        return None
    word = match.group(1)
    if len(word) < 3 or word.lower() in FUNCTION_WORDS:
        return None
    earlier = {w.lower() for w in WORD.findall(passage[: match.start(1)])}
    return word if word.lower() in earlier else None


def build_cloze(
    documents: Sequence[Document], n: int = DEFAULT_N, seed: int = DEFAULT_SEED
) -> list[dict[str, Any]]:
    """Last-word cloze rows: ``text``, ``context``, ``target`` (``context + target == text``)."""

    def build(candidate: Candidate, rng: random.Random) -> dict[str, Any]:
        doc, sentences, i, j = candidate
        passage = doc.text[sentences[i].start : sentences[j - 1].end]
        match = _LAST_WORD.search(passage)
        return {
            **provenance(doc, sentences, i, j),
            "text": passage[: match.end(1)],
            "context": passage[: match.start(1) - 1],
            "target": passage[match.start(1) - 1 : match.end(1)],
        }

    def accept(doc: Document, sentences: list[Sentence], i: int, j: int) -> bool:
        return j - i >= 2 and _cloze_word(doc, sentences, i, j) is not None

    return sample_rows("cloze", documents, n, seed, _CLOZE_WORDS, accept, build, overlap=True)
