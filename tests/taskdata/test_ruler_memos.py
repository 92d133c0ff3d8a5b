"""The RULER generators read their corpora once per cache folder: a process that points
``$LONGRED_CACHE`` elsewhere reads that cache, not the corpora an earlier call read."""

from __future__ import annotations

import random

import pytest
from data_helpers import ensure_cached

from longred_bench.errors import UserError
from longred_bench.taskdata.ruler import haystack, qa

READERS = {
    "vocabulary": lambda: haystack.vocabulary("brown"),
    "essay": lambda: haystack.essay_units("brown", random.Random(0), 5),
    "squad": qa.squad,
    "drop": qa.drop,
    "coqa": qa.coqa_stories,
}


@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_generator_reads_the_cache_it_is_pointed_at_not_the_one_it_read_first(
    reader, request, tmp_path, monkeypatch
) -> None:
    ensure_cached(request, "brown", "benchmarks")
    assert READERS[reader]()  # read from the real cache, and remembered
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "empty"))
    with pytest.raises(UserError, match="longred-bench data fetch"):
        READERS[reader]()
