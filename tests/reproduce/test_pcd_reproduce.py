"""``reproduce pcd --profile smoke``: RULER, PSA and short tasks with and without PCD, the
strength sweep, the verdicts and the figure; a rerun reuses every cached unit."""

from __future__ import annotations

import json

import pytest
import torch
from data_helpers import ensure_cached

from longred_bench.cache import cache_dir
from longred_bench.cli import main

pytestmark = pytest.mark.integration


@pytest.fixture
def one_thread():
    """One intra-op thread: the tiny model's small matmuls wait for busy cores otherwise."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_reproduce_pcd_smoke(tmp_path, monkeypatch, request, one_thread):
    ensure_cached(request, "brown", "austen")
    real = cache_dir()
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "corpora").symlink_to(real / "corpora")  # the data from the real cache, runs fresh
    monkeypatch.setenv("LONGRED_CACHE", str(cache))
    out = tmp_path / "report"
    argv = ["reproduce", "pcd", "--profile", "smoke", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    md = (out / "pcd.md").read_text()
    assert "profile `smoke`" in md and (out / "pcd.png").stat().st_size > 0
    for claim in ("salience falls", "improves long-context retrieval", "does not hurt short"):
        lines = [x for x in md.splitlines() if x.startswith("- ") and claim in x]
        assert len(lines) == 2, claim  # one verdict per line: original and pi:factor=4
        assert all(any(f"**{v}**" in x for v in ("holds", "does not hold", "undecided"))
                   for x in lines)  # fmt: skip
    assert "| original +pcd |" in md and "| pi:factor=4 +pcd |" in md
    assert "## Contrast strength sweep: `longred_ruler_vt` at 512 tokens" in md
    assert "No number of the PCD paper" in md
    records = [json.loads(x) for x in (out / "pcd.jsonl").read_text().splitlines()]
    parts = {(r["part"], r["line"], r["decoding"]) for r in records}
    for line in ("original", "pi:factor=4"):
        for dec in ("greedy", "pcd"):
            assert {("ruler", line, dec), ("short", line, dec), ("psa", line, dec)} <= parts
    assert {r["alpha"] for r in records if r["part"] == "sweep"} == {0.0, 0.5, 3.0}
    pcd = next(r["pcd"] for r in records if r["part"] == "ruler" and r["line"] == "pi:factor=4"
               and r["kind"] == "eval" and r["decoding"] == "pcd")  # fmt: skip
    assert pcd["local_window"] == 256  # the original model's window, not the extended one
    assert any(r["kind"] == "eval_item" and r["part"] == "short" for r in records)
    runs = sorted(p.name for p in (cache / "runs").iterdir())
    mtimes = {p: p.stat().st_mtime_ns for p in (cache / "runs").rglob("*.jsonl")}
    assert main(argv) == 0  # a rerun reuses every unit
    assert sorted(p.name for p in (cache / "runs").iterdir()) == runs
    assert {p: p.stat().st_mtime_ns for p in (cache / "runs").rglob("*.jsonl")} == mtimes


def test_pcd_lines_of_trained_checkpoints(tmp_path, monkeypatch, request, one_thread):
    """A profile's trained rows are trained (or reused from Table 3's cache) and become lines
    of their own (here the only ones), evaluated with their saved RoPE, greedy and PCD, in
    RULER, short and PSA."""
    import dataclasses

    from longred_bench.reproduce import pcd as pcd_run

    ensure_cached(request, "brown", "austen")
    real = cache_dir()
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "corpora").symlink_to(real / "corpora")
    monkeypatch.setenv("LONGRED_CACHE", str(cache))
    small = dataclasses.replace(
        pcd_run.PCD_PROFILES["smoke"], ropes=(), ruler_tasks=("vt",), lengths=(512,),
        ruler_samples=1, short_limit=2, psa_samples=1, sweep_alphas=(),
        trained=(("cpt", "abf:theta=1e5"),),
    )  # fmt: skip
    monkeypatch.setitem(pcd_run.PCD_PROFILES, "smoke", small)
    records, _ = pcd_run.run_pcd("smoke", progress=False)
    line = "cpt abf:theta=1e5"
    parts = {(r["part"], r["line"], r["decoding"]) for r in records}
    for dec in ("greedy", "pcd"):
        assert {("ruler", line, dec), ("short", line, dec), ("psa", line, dec)} <= parts
    models = {r["model"] for r in records if r["kind"] == "eval" and r["line"] == line}
    assert len(models) == 1 and models.pop().endswith("/final")
    assert len(list((cache / "runs").glob("train-cpt-*/final/config.json"))) == 1
