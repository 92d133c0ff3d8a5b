"""The tiny ``ppl`` task: verbatim passages of 80-150 words, scored by rolling log-likelihood."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from longred_bench.data.corpora import Document
from longred_bench.taskdata.tiny_sampling import (
    DEFAULT_N,
    DEFAULT_SEED,
    Candidate,
    provenance,
    sample_rows,
)

_PPL_WORDS = (80, 150)


def build_ppl(
    documents: Sequence[Document], n: int = DEFAULT_N, seed: int = DEFAULT_SEED
) -> list[dict[str, Any]]:
    """Perplexity rows: ``text``, a verbatim passage of 80-150 words."""

    def build(candidate: Candidate, rng: random.Random) -> dict[str, Any]:
        doc, sentences, i, j = candidate
        return {
            **provenance(doc, sentences, i, j),
            "text": doc.text[sentences[i].start : sentences[j - 1].end],
        }

    return sample_rows("ppl", documents, n, seed, _PPL_WORDS, lambda *window: True, build)
