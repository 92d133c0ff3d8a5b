"""The tiny ``nextsent`` task: which of four sentences comes next.

3 consecutive sentences (15-100 words) as ``context`` and 4 ``choices``: the true next sentence
(6-35 words) and 3 distractor sentences from *other* documents, from the same corpus where its
test split has other documents (Brown, KJV) and from the other corpora of the mix where it has
not (Austen's test split is one novel). Distractors are usable sentences of 6-35 words whose
length in characters is within 20% of the true sentence's (the band widens only if too few
qualify), so length is no cue; the choice order is shuffled, ``gold`` indexes the true one.
"""

from __future__ import annotations

import random
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Any

from longred_bench.data.corpora import Document
from longred_bench.data.sentences import Sentence, split_sentences
from longred_bench.errors import UserError
from longred_bench.taskdata.tiny_sampling import (
    DEFAULT_N,
    DEFAULT_SEED,
    NUM_CHOICES,
    Candidate,
    provenance,
    sample_rows,
)

_NEXTSENT_CONTEXT_SENTENCES = 3
_NEXTSENT_CONTEXT_WORDS = (15, 100)
_NEXTSENT_TARGET_WORDS = (6, 35)
_NEXTSENT_LENGTH_BAND = 0.2

Entry = tuple[str, str, str]  # a distractor candidate: (text, corpus, doc_id)
Pool = tuple[list[int], list[Entry]]  # entries sorted by length in characters, and the lengths


def _distractor_pools(documents: Sequence[Document]) -> dict[tuple[str, str], Pool]:
    low, high = _NEXTSENT_TARGET_WORDS
    per_doc: dict[tuple[str, str], list[Entry]] = {}
    for doc in documents:
        per_doc[(doc.corpus, doc.doc_id)] = [
            (doc.text[s.start : s.end], doc.corpus, doc.doc_id)
            for s in split_sentences(doc.text)
            if s.usable and low <= s.words <= high
        ]
    pools = {}
    for key in per_doc:
        corpus = key[0]
        same = [k for k in per_doc if k[0] == corpus and k != key]
        sources = same or [k for k in per_doc if k != key]
        entries = sorted((e for k in sources for e in per_doc[k]), key=lambda e: (len(e[0]), e))
        pools[key] = ([len(e[0]) for e in entries], entries)
    return pools


def _pick_distractors(pool: Pool, true_text: str, k: int, rng: random.Random) -> list[Entry]:
    lengths, entries = pool
    band = _NEXTSENT_LENGTH_BAND
    normal = " ".join(true_text.split())
    while True:
        lo = bisect_left(lengths, len(true_text) * (1 - band))
        hi = bisect_right(lengths, len(true_text) * (1 + band))
        seen, options = {normal}, []
        for entry in entries[lo:hi]:
            key = " ".join(entry[0].split())
            if key not in seen:
                seen.add(key)
                options.append(entry)
        if len(options) >= k:
            return rng.sample(options, k)
        if lo == 0 and hi == len(entries):
            raise UserError(
                f"only {len(options)} distractor sentences for the nextsent task: it needs "
                "documents other than the one a sample comes from"
            )
        band *= 2


def build_nextsent(
    documents: Sequence[Document], n: int = DEFAULT_N, seed: int = DEFAULT_SEED
) -> list[dict[str, Any]]:
    """Next-sentence rows: ``context``, ``choices`` (4 sentences), ``gold`` and ``choice_docs``
    (each choice's source document as ``"corpus/doc_id"``)."""
    pools = _distractor_pools(documents)
    count = _NEXTSENT_CONTEXT_SENTENCES
    target_low, target_high = _NEXTSENT_TARGET_WORDS
    context_low, context_high = _NEXTSENT_CONTEXT_WORDS

    def accept(doc: Document, sentences: list[Sentence], i: int, j: int) -> bool:
        if j - i != count + 1:
            return False
        context_words = sum(s.words for s in sentences[i : j - 1])
        return (
            context_low <= context_words <= context_high
            and target_low <= sentences[j - 1].words <= target_high
        )

    def build(candidate: Candidate, rng: random.Random) -> dict[str, Any]:
        doc, sentences, i, j = candidate
        true_text = doc.text[sentences[j - 1].start : sentences[j - 1].end]
        picked = _pick_distractors(pools[(doc.corpus, doc.doc_id)], true_text, NUM_CHOICES - 1, rng)
        options = [(true_text, doc.corpus, doc.doc_id), *picked]
        order = list(range(NUM_CHOICES))
        rng.shuffle(order)
        return {
            **provenance(doc, sentences, i, j),
            "context": doc.text[sentences[i].start : sentences[j - 2].end],
            "choices": [options[k][0] for k in order],
            "gold": order.index(0),
            "choice_docs": [f"{options[k][1]}/{options[k][2]}" for k in order],
        }

    words = (0, context_high + target_high)  # the window is 4 sentences, checked by accept
    return sample_rows("nextsent", documents, n, seed, words, accept, build)
