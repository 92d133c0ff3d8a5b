"""``reproduce table3 --profile smoke``: every row trained, evaluated with per-document scores,
reported beside the paper with verdicts; a rerun reuses every cached unit."""

from __future__ import annotations

import json

import pytest
from data_helpers import ensure_cached

from longred_bench.cache import cache_dir
from longred_bench.cli import main

pytestmark = pytest.mark.integration


def test_reproduce_table3_smoke(tmp_path, monkeypatch, request):
    ensure_cached(request, "brown", "austen", "benchmarks")
    real = cache_dir()
    cache = tmp_path / "cache"
    cache.mkdir()
    for folder in ("corpora", "benchmarks"):  # the data from the real cache, runs in a fresh one
        (cache / folder).symlink_to(real / folder)
    monkeypatch.setenv("LONGRED_CACHE", str(cache))
    out = tmp_path / "report"
    argv = ["reproduce", "table3", "--profile", "smoke", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    md = (out / "table3.md").read_text()
    assert "profile `smoke`" in md and "LongReD-C" in md and "Llama-3-8B" in md
    assert "## Verdicts" in md
    records = [json.loads(x) for x in (out / "table3.jsonl").read_text().splitlines()]
    rows = {(r["row"], r["extension"]) for r in records}
    assert rows == {
        ("original", None),
        ("zero-shot", "abf:theta=1e5"),
        ("control", "abf:theta=1e5"),
        ("cpt", "abf:theta=1e5"),
        ("longred-c", "abf:theta=1e5"),
    }
    items = [r for r in records if r["kind"] == "eval_item"]
    assert {r["suite"] for r in items} == {"short_tiny", "ruler"}
    trained = [r for r in records if r["train"]]
    assert {r["train"]["steps"] for r in trained} == {2}
    assert (out / "table3.png").read_bytes()[:4] == b"\x89PNG"
    # A rerun trains and evaluates nothing again: identical records (provenance included).
    assert main(argv) == 0
    again = [json.loads(x) for x in (out / "table3.jsonl").read_text().splitlines()]
    assert again == records
