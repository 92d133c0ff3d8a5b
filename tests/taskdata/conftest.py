"""Tokenizer fixtures of the RULER generator tests: the byte tokenizer and SmolLM2's (a test
module may define its own, with the data it needs)."""

from __future__ import annotations

import pytest
from data_helpers import ensure_cached

from longred_bench.models.zoo import byte_tokenizer


@pytest.fixture(scope="module")
def byte_tok(request):
    ensure_cached(request, "brown", "benchmarks")
    return byte_tokenizer()


@pytest.fixture(scope="module")
def smol_tok(request):
    ensure_cached(request, "brown", "benchmarks", "smollm2")
    from transformers import AutoTokenizer

    from longred_bench.data.corpora import model_dir

    return AutoTokenizer.from_pretrained(model_dir("smollm2-135m"))
