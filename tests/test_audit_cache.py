"""An empty or blank ``$LONGRED_CACHE`` is unset, not the working folder (where a run would
scatter its cache)."""

from __future__ import annotations

from pathlib import Path

import pytest

from longred_bench.cache import cache_dir


@pytest.mark.parametrize("value", ["", "   "])
def test_a_blank_cache_variable_means_the_default_cache(monkeypatch, tmp_path, value) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LONGRED_CACHE", value)
    assert cache_dir() == Path.home() / ".cache" / "longred-bench"
    monkeypatch.setenv("LONGRED_CACHE", "rel")
    assert cache_dir() == tmp_path / "rel"  # a relative one: from the working folder
