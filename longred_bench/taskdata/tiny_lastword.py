"""The tiny ``lastword`` task: the last word of a passage, among four words of a similar frequency.

A passage of 30-90 words (at most :data:`_MAX_CHARS` characters, at least 2 sentences) whose
last sentence ends in a lowercase content word (3+ letters, not a function word). ``context``
is the passage up to that word (the final punctuation is dropped); ``choices`` are the word and 3
other content words of a similar frequency in the same documents (count within a factor of 1.25,
:func:`~longred_bench.taskdata.tiny_pairs.content_vocabulary`) that do not occur in the passage,
drawn per row and shuffled; ``gold`` indexes the true word. Each choice is scored after the
context with a leading space (chance 0.25).

Frequency is matched so that a model that ignores the context gains nothing from a word's prior;
the distractors are absent from the passage, so a word repeated from earlier in it (as in
LAMBADA) is a fair cue: using the context is what is measured. A passage ends at every usable
sentence of a document that qualifies (passages of different targets may share sentences).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any

from longred_bench.data.corpora import Document
from longred_bench.data.sentences import Sentence
from longred_bench.taskdata.tiny_pairs import Vocabulary, content_vocabulary, is_content_word
from longred_bench.taskdata.tiny_sampling import (
    DEFAULT_N,
    DEFAULT_SEED,
    NUM_CHOICES,
    Candidate,
    provenance,
    sample_rows,
)
from longred_bench.taskdata.tiny_words import WORD

_LASTWORD_WORDS = (30, 90)
_MAX_CHARS = 600
_LAST_WORD = re.compile(r" ([A-Za-z]+)[.!?]+[\"')\]]*$")


def _options(passage: str, word: str, vocab: Vocabulary) -> list[str]:
    """The words that may stand in for ``word``: its frequency band, minus the passage's words."""
    present = {w.lower() for w in WORD.findall(passage)}
    return [w for w in vocab.get(word, ()) if w not in present]


def _last_word(passage: str) -> re.Match[str] | None:
    """The passage's last word (before its final punctuation) when it is a content word."""
    match = _LAST_WORD.search(passage)
    return match if match is not None and is_content_word(match.group(1)) else None


def build_lastword(
    documents: Sequence[Document], n: int = DEFAULT_N, seed: int = DEFAULT_SEED
) -> list[dict[str, Any]]:
    """Last-word rows: ``context``, ``choices`` (four words), ``gold`` and ``target`` (the true
    word; ``context + " " + target`` is the verbatim passage without its final punctuation)."""
    vocab = content_vocabulary(documents)

    def passage(doc: Document, sentences: list[Sentence], i: int, j: int) -> str:
        return doc.text[sentences[i].start : sentences[j - 1].end]

    def accept(doc: Document, sentences: list[Sentence], i: int, j: int) -> bool:
        text = passage(doc, sentences, i, j)
        if j - i < 2 or len(text) > _MAX_CHARS:
            return False
        match = _last_word(text)
        return match is not None and len(_options(text, match.group(1), vocab)) >= NUM_CHOICES - 1

    def build(candidate: Candidate, rng: random.Random) -> dict[str, Any]:
        doc, sentences, i, j = candidate
        text = passage(doc, sentences, i, j)
        match = _last_word(text)
        word = match.group(1)
        choices = [word, *rng.sample(_options(text, word, vocab), NUM_CHOICES - 1)]
        rng.shuffle(choices)
        return {
            **provenance(doc, sentences, i, j),
            "context": text[: match.start(1) - 1],
            "choices": choices,
            "gold": choices.index(word),
            "target": word,
        }

    return sample_rows("lastword", documents, n, seed, _LASTWORD_WORDS, accept, build, overlap=True)
