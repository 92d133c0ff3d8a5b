"""The tiny ``ppl`` task: verbatim passages of 80-120 words, scored by rolling log-likelihood.

A passage has at most 640 characters, so nearly every one fits a 256-token window whole (lm-eval
scores a longer one in windows: one of the 500 default rows, full of figures, has 259 tokens of
tiny-base's tokenizer)."""

from __future__ import annotations

import random
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

_PPL_WORDS = (80, 120)
_MAX_CHARS = 640


def build_ppl(
    documents: Sequence[Document], n: int = DEFAULT_N, seed: int = DEFAULT_SEED
) -> list[dict[str, Any]]:
    """Perplexity rows: ``text``, a verbatim passage of 80-120 words."""

    def build(candidate: Candidate, rng: random.Random) -> dict[str, Any]:
        doc, sentences, i, j = candidate
        return {
            **provenance(doc, sentences, i, j),
            "text": doc.text[sentences[i].start : sentences[j - 1].end],
        }

    def accept(doc: Document, sentences: list[Sentence], i: int, j: int) -> bool:
        return sentences[j - 1].end - sentences[i].start <= _MAX_CHARS

    return sample_rows("ppl", documents, n, seed, _PPL_WORDS, accept, build)
