"""The tiny minimal-pair tasks ``swap`` and ``replace`` (chance 0.5).

Two consecutive sentences (10-80 words) as ``context`` and two ``choices``: the true next
sentence (6-30 words) and a corrupted copy of it. ``swap`` exchanges two adjacent lowercase words
(one space apart, different words); ``replace`` puts another content word of a similar frequency
in the same documents (count within a factor of 1.25, :func:`content_vocabulary`) in place of one
lowercase content word (3+ letters, not a function word, not the first word). The pair is scored
by total log-likelihood (``acc``): a swap keeps the same words and a replacement keeps the word
frequency, so a model that ignores word order and context gains nothing from either corruption.
"""

from __future__ import annotations

import random
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from itertools import pairwise
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

_PAIR_CONTEXT_SENTENCES = 2
_PAIR_CONTEXT_WORDS = (10, 80)
_PAIR_TARGET_WORDS = (6, 30)
# ``replace``: a content word seen at least this often in the documents is replaced by another
# whose count is within this factor of its own.
_MIN_COUNT = 3
_FREQUENCY_BAND = 1.25

Vocabulary = dict[str, list[str]]  # content word -> content words of a similar frequency


def _swap(sentence: str, rng: random.Random, vocab: Vocabulary) -> str | None:
    """``sentence`` with two adjacent lowercase words (one space apart, different) swapped, the
    pair drawn with ``rng``; ``None`` when it has no such pair."""
    words = list(WORD.finditer(sentence))
    pairs = [
        (a, b)
        for a, b in pairwise(words)
        if sentence[a.end() : b.start()] == " "
        and a.group().islower() and b.group().islower() and a.group() != b.group()
    ]  # fmt: skip
    if not pairs:
        return None
    a, b = rng.choice(pairs)
    return sentence[: a.start()] + b.group() + " " + a.group() + sentence[b.end() :]


def is_content_word(word: str) -> bool:
    """A word a task may replace or ask for: lowercase, 3+ letters, not a function word."""
    return word.islower() and len(word) >= 3 and word not in FUNCTION_WORDS


def content_vocabulary(documents: Sequence[Document]) -> Vocabulary:
    """For each content word of ``documents`` (lowercase, 3+ letters, not a function word) seen
    at least :data:`_MIN_COUNT` times, the other such words whose count is within a factor of
    :data:`_FREQUENCY_BAND` of its own (sorted): the replacements the ``replace`` task draws."""
    counts: dict[str, int] = {}
    for doc in documents:
        for match in WORD.finditer(doc.text):
            word = match.group()
            if is_content_word(word):
                counts[word] = counts.get(word, 0) + 1
    ranked = sorted((c, w) for w, c in counts.items() if c >= _MIN_COUNT)
    keys = [c for c, _ in ranked]
    out: Vocabulary = {}
    for count, word in ranked:
        lo = bisect_left(keys, count / _FREQUENCY_BAND)
        hi = bisect_right(keys, count * _FREQUENCY_BAND)
        out[word] = [w for _, w in ranked[lo:hi] if w != word]
    return out


def _replace(sentence: str, rng: random.Random, vocab: Vocabulary) -> str | None:
    """``sentence`` with one content word (not the first word, in ``vocab``) replaced by another
    content word of a similar frequency in the same documents that is not in the sentence, both
    drawn with ``rng``; ``None`` when it has no such word. Frequency is matched so that a model
    that ignores context gains nothing from the replacement, in either direction."""
    words = list(WORD.finditer(sentence))
    present = {w.group().lower() for w in words}
    slots = [
        k for k, w in enumerate(words)
        if k > 0 and is_content_word(w.group())
        and any(o not in present for o in vocab.get(w.group(), ()))
    ]  # fmt: skip
    if not slots:
        return None
    k = rng.choice(slots)
    word = rng.choice([o for o in vocab[words[k].group()] if o not in present])
    return sentence[: words[k].start()] + word + sentence[words[k].end() :]


CORRUPTIONS: dict[str, Callable[[str, random.Random, Vocabulary], str | None]] = {
    "swap": _swap,
    "replace": _replace,
}


def build_pairs(
    task: str, documents: Sequence[Document], n: int = DEFAULT_N, seed: int = DEFAULT_SEED
) -> list[dict[str, Any]]:
    """Minimal-pair rows of ``task`` (``swap`` or ``replace``): ``context`` (two sentences),
    ``choices`` (the true next sentence and its corrupted copy, shuffled), ``gold``,
    ``original`` and ``corrupted``."""
    corrupt = CORRUPTIONS[task]
    vocab = content_vocabulary(documents) if task == "replace" else {}
    count = _PAIR_CONTEXT_SENTENCES
    context_low, context_high = _PAIR_CONTEXT_WORDS
    target_low, target_high = _PAIR_TARGET_WORDS

    def target(doc: Document, sentences: list[Sentence], j: int) -> str:
        return doc.text[sentences[j - 1].start : sentences[j - 1].end]

    def accept(doc: Document, sentences: list[Sentence], i: int, j: int) -> bool:
        if j - i != count + 1 or not target_low <= sentences[j - 1].words <= target_high:
            return False
        context_words = sum(s.words for s in sentences[i : j - 1])
        probe = random.Random(0)  # corruptible at all (the row draws its own corruption)
        return context_low <= context_words <= context_high and bool(
            corrupt(target(doc, sentences, j), probe, vocab)
        )

    def build(candidate: Candidate, rng: random.Random) -> dict[str, Any]:
        doc, sentences, i, j = candidate
        original = target(doc, sentences, j)
        corrupted = corrupt(original, rng, vocab)
        choices = [original, corrupted]
        rng.shuffle(choices)
        return {
            **provenance(doc, sentences, i, j),
            "context": doc.text[sentences[i].start : sentences[j - 2].end],
            "choices": choices,
            "gold": choices.index(original),
            "original": original,
            "corrupted": corrupted,
        }

    words = (0, context_high + target_high)  # the window is 3 sentences, checked by accept
    return sample_rows(task, documents, n, seed, words, accept, build)
