"""The tiny ``nextsent`` task: which of four passages of the same document a sentence comes next
after.

A window of 3 consecutive sentences (15-90 words together) and the sentence after it (6-30
words; the window at most 640 characters): the ``sentence`` is scored after each of four
``contexts``, the true 3 sentences and 3 other runs of 3 consecutive usable sentences of the
*same* document, each ending at least :data:`_FAR` sentences from the true window's end (so none
is a neighbour that the sentence could follow as well), of a similar length (word count within
20% of the true context's; the band widens only if too few qualify) and short enough to precede
the sentence within 640 characters, in shuffled order; ``gold`` indexes the true context. The
four are different texts: a passage the document repeats word for word is one choice at most,
and never beside itself as the true context.

The choices are contexts, not continuations (lm-eval's multiple-input form, as WinoGrande's):
every choice scores the same sentence, so its own frequency and length are no cue and only how
well it follows the passage counts. Distractors from the same document share its topic, its
speaker and its period, so the corpus a sentence comes from is no cue either.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from longred_bench.data.corpora import Document
from longred_bench.data.sentences import Sentence
from longred_bench.errors import UserError
from longred_bench.taskdata.tiny_sampling import (
    DEFAULT_N,
    DEFAULT_SEED,
    NUM_CHOICES,
    Candidate,
    provenance,
    sample_rows,
)

_CONTEXT_SENTENCES = 3
_CONTEXT_WORDS = (15, 90)
_TARGET_WORDS = (6, 30)
_LENGTH_BAND = 0.2
_FAR = 10  # sentences between the true window's end and any other context's end, at least
_MAX_CHARS = 640  # a context, a space and the sentence, at most

Run = tuple[int, int]  # sentences [i, j) of one document


def _context_runs(sentences: list[Sentence]) -> list[Run]:
    """Every run of :data:`_CONTEXT_SENTENCES` consecutive usable sentences within the context's
    word range (overlapping runs included: they are the other contexts a row draws from)."""
    low, high = _CONTEXT_WORDS
    count = _CONTEXT_SENTENCES
    return [
        (i, i + count)
        for i in range(len(sentences) - count + 1)
        if all(s.usable for s in sentences[i : i + count])
        and low <= sum(s.words for s in sentences[i : i + count]) <= high
    ]


def _text(doc: Document, sentences: list[Sentence], run: Run) -> str:
    return doc.text[sentences[run[0]].start : sentences[run[1] - 1].end]


def _pick_contexts(
    doc: Document, runs: list[Run], sentences: list[Sentence], true: Run, rng: random.Random
) -> list[Run]:
    """:data:`NUM_CHOICES` - 1 other runs of ``doc``, far from ``true``, of a similar length,
    each short enough to precede the true sentence within :data:`_MAX_CHARS`."""

    def words(run: Run) -> int:
        return sum(s.words for s in sentences[run[0] : run[1]])

    room = _MAX_CHARS - 1 - (sentences[true[1]].end - sentences[true[1]].start)
    seen = {" ".join(_text(doc, sentences, true).split())}
    far = []  # each text once: a passage the document repeats is one choice, never the true one
    for run in runs:
        text = _text(doc, sentences, run)
        if abs(run[1] - true[1]) >= _FAR and len(text) <= room:
            words_only = " ".join(text.split())
            if words_only not in seen:
                seen.add(words_only)
                far.append(run)
    band, target = _LENGTH_BAND, words(true)
    while True:
        options = [run for run in far if abs(words(run) - target) <= band * target]
        if len(options) >= NUM_CHOICES - 1:
            return rng.sample(options, NUM_CHOICES - 1)
        if len(options) == len(far):
            raise UserError(
                f"document {doc.corpus}/{doc.doc_id} has only {len(far)} passages far enough "
                "from a nextsent window to serve as its other choices"
            )
        band *= 2


def build_nextsent(
    documents: Sequence[Document], n: int = DEFAULT_N, seed: int = DEFAULT_SEED
) -> list[dict[str, Any]]:
    """Next-sentence rows: ``sentence``, ``contexts`` (four passages of its document), ``gold``
    (the true one) and ``context_starts`` (each context's character offset in the document)."""
    runs: dict[tuple[str, str], list[Run]] = {}
    count = _CONTEXT_SENTENCES
    target_low, target_high = _TARGET_WORDS
    context_low, context_high = _CONTEXT_WORDS

    def accept(doc: Document, sentences: list[Sentence], i: int, j: int) -> bool:
        if j - i != count + 1:
            return False
        context_words = sum(s.words for s in sentences[i : j - 1])
        return (
            context_low <= context_words <= context_high
            and target_low <= sentences[j - 1].words <= target_high
            and sentences[j - 1].end - sentences[i].start <= _MAX_CHARS
        )

    def build(candidate: Candidate, rng: random.Random) -> dict[str, Any]:
        doc, sentences, i, j = candidate
        key = (doc.corpus, doc.doc_id)
        if key not in runs:
            runs[key] = _context_runs(sentences)
        true = (i, j - 1)
        options = [true, *_pick_contexts(doc, runs[key], sentences, true, rng)]
        order = list(range(NUM_CHOICES))
        rng.shuffle(order)
        chosen = [options[k] for k in order]
        return {
            **provenance(doc, sentences, i, j),
            "sentence": doc.text[sentences[j - 1].start : sentences[j - 1].end],
            "contexts": [_text(doc, sentences, run) for run in chosen],
            "gold": order.index(0),
            "context_starts": [sentences[a].start for a, _ in chosen],
        }

    words = (0, context_high + target_high)  # the window is 4 sentences, checked by accept
    return sample_rows("nextsent", documents, n, seed, words, accept, build)
