"""Passages of held-out prose and the seeded sampling that every tiny task builds its rows with.

Text is cut into sentences by :func:`longred_bench.data.sentences.split_sentences` (rules there: a
sentence is *usable* when it ends with ``.``, ``!`` or ``?``, starts with a capital, and has 3 to
60 words); passages are runs of consecutive usable sentences (they may span paragraphs, never a
heading or an unfinished fragment), kept verbatim and cut without overlap, except for
``lastword``, which has one passage per target sentence (passages of different targets may share
sentences).

Which windows are taken is decided by a ``random.Random`` seeded with a string naming the task,
corpus and seed, so a build is identical on every machine and run. The ``n`` samples of a task are
split evenly over the corpora of the mix (the first corpora take the remainder), sampled without
replacement from each corpus's candidate passages, and interleaved corpus by corpus, so the first
rows (what lm-eval's ``--limit`` keeps) cover every corpus of a mix (the default is one source).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from longred_bench.data.corpora import Document
from longred_bench.data.sentences import Sentence, split_sentences
from longred_bench.errors import UserError

DEFAULT_N = 500
DEFAULT_SEED = 1234
NUM_CHOICES = 4


def _windows(
    sentences: Sequence[Sentence],
    words: tuple[int, int],
    accept: Callable[[int, int], bool],
) -> list[tuple[int, int]]:
    """Non-overlapping runs ``[i, j)`` of usable sentences with a word total within ``words``.

    From each start the longest accepted run is taken; the scan resumes after it.
    """
    low, high = words
    found: list[tuple[int, int]] = []
    i = 0
    while i < len(sentences):
        best, total, j = None, 0, i
        while j < len(sentences) and sentences[j].usable and total + sentences[j].words <= high:
            total += sentences[j].words
            j += 1
            if total >= low and accept(i, j):
                best = j
        if best is None:
            i += 1
        else:
            found.append((i, best))
            i = best
    return found


def _windows_ending(
    sentences: Sequence[Sentence],
    words: tuple[int, int],
    accept: Callable[[int, int], bool],
) -> list[tuple[int, int]]:
    """One run ``[i, j)`` per end sentence ``j - 1``: the longest run of usable sentences ending
    there with at most ``words[1]`` words, kept when it has ``words[0]`` or more and is accepted.
    Runs of different ends may overlap."""
    low, high = words
    found: list[tuple[int, int]] = []
    for j in range(1, len(sentences) + 1):
        if not sentences[j - 1].usable:
            continue
        i, total = j - 1, sentences[j - 1].words
        while i > 0 and sentences[i - 1].usable and total + sentences[i - 1].words <= high:
            i -= 1
            total += sentences[i].words
        if low <= total <= high and accept(i, j):
            found.append((i, j))
    return found


def _quotas(n: int, corpora: Sequence[str]) -> dict[str, int]:
    base, extra = divmod(n, len(corpora))
    return {c: base + (1 if k < extra else 0) for k, c in enumerate(corpora)}


def _interleave(groups: Sequence[Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for rank in range(max((len(g) for g in groups), default=0)):
        rows.extend(g[rank] for g in groups if rank < len(g))
    return rows


Candidate = tuple[Document, list[Sentence], int, int]


def _doc_candidates(
    doc: Document,
    words: tuple[int, int],
    accept: Callable[[Document, list[Sentence], int, int], bool],
    overlap: bool,
) -> list[Candidate]:
    sentences = split_sentences(doc.text)
    scan = _windows_ending if overlap else _windows
    windows = scan(sentences, words, lambda i, j: accept(doc, sentences, i, j))
    return [(doc, sentences, i, j) for i, j in windows]


def sample_rows(
    task: str,
    documents: Sequence[Document],
    n: int,
    seed: int,
    words: tuple[int, int],
    accept: Callable[[Document, list[Sentence], int, int], bool],
    build: Callable[[Candidate, random.Random], dict[str, Any]],
    *,
    overlap: bool = False,
) -> list[dict[str, Any]]:
    """Pick ``n`` candidate windows, split evenly over corpora, and build a row from each."""
    if n < 1:
        raise UserError(f"a tiny task needs n >= 1 samples (got {n})")
    corpora = list(dict.fromkeys(d.corpus for d in documents))
    if not corpora:
        raise UserError(f"no documents to build the tiny {task} task from")
    groups = []
    for corpus, quota in _quotas(n, corpora).items():
        candidates = [
            candidate
            for doc in documents
            if doc.corpus == corpus
            for candidate in _doc_candidates(doc, words, accept, overlap)
        ]
        if len(candidates) < quota:
            raise UserError(
                f"corpus {corpus!r} yields {len(candidates)} passages for the tiny {task} task, "
                f"{quota} are needed: lower n or add corpora"
            )
        rng = random.Random(f"longred-tiny/{task}/{corpus}/{seed}")
        chosen = rng.sample(candidates, quota)
        groups.append([build(candidate, rng) for candidate in chosen])
    return _interleave(groups)


def provenance(doc: Document, sentences: list[Sentence], i: int, j: int) -> dict[str, Any]:
    """Where a row's passage ``[i, j)`` comes from: corpus, document and character offsets."""
    return {
        "corpus": doc.corpus,
        "doc_id": doc.doc_id,
        "start": sentences[i].start,
        "end": sentences[j - 1].end,
    }
