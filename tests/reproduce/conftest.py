"""Fixtures of the reproduce tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from data_helpers import ensure_cached

from longred_bench.cache import cache_dir
from longred_bench.taskdata.tiny_store import FOLDER


@pytest.fixture
def smoke_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request) -> Path:
    """A fresh run cache (``$LONGRED_CACHE``) holding the real cache's corpora and benchmark
    files (fetched first where ``--run-network`` allows, else the test is skipped), its built
    tiny-task rows and its RULER samples (both stores are keyed by their generator's code and
    parameters, and write atomically): a smoke reproduce trains and evaluates every unit anew
    without fetching its data or building its rows and samples again."""
    ensure_cached(request, "brown", "austen", "sotu", "benchmarks")
    real = cache_dir()
    cache = tmp_path / "cache"
    cache.mkdir()
    shared = ("corpora", "benchmarks", FOLDER, "ruler")  # rows and samples: keyed by code
    for folder in shared:
        (real / folder).mkdir(parents=True, exist_ok=True)
        (cache / folder).symlink_to(real / folder)
    monkeypatch.setenv("LONGRED_CACHE", str(cache))
    return cache


@pytest.fixture
def computed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Evaluations computed for real by a stand-in of the harness, in a fresh run cache: each
    records the unit it computed (``of``) and the calls are listed by the units' names."""
    import longred_bench.jobs.unit_compute as unit_compute

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    calls: list[str] = []

    def fake(config, progress, **_):
        calls.append(config["name"])
        return [{"kind": "eval", "value": float(len(calls)), "of": config["name"]}]

    monkeypatch.setattr(unit_compute, "run_eval_unit", fake)
    return calls
