"""Fixtures of the reproduce tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from data_helpers import ensure_cached

from longred_bench.cache import cache_dir


@pytest.fixture
def smoke_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request) -> Path:
    """A fresh run cache (``$LONGRED_CACHE``) holding the real cache's corpora and benchmark
    files (fetched first where ``--run-network`` allows, else the test is skipped): a smoke
    reproduce trains and evaluates every unit anew without fetching its data again."""
    ensure_cached(request, "brown", "austen", "sotu", "benchmarks")
    real = cache_dir()
    cache = tmp_path / "cache"
    cache.mkdir()
    for folder in ("corpora", "benchmarks"):
        (cache / folder).symlink_to(real / folder)
    monkeypatch.setenv("LONGRED_CACHE", str(cache))
    return cache
