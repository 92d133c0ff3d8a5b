"""``reproduce pcd --profile smoke``: PCD's settings chosen on dev samples, then RULER, PSA and
short tasks with and without PCD on test samples, the verdicts, the failure listing and the
figure; a rerun reuses every cached unit."""

from __future__ import annotations

import shutil

import pytest
import torch
from data_helpers import ensure_cached

from longred_bench.cache import cache_dir
from longred_bench.cli import main
from longred_bench.reports.verdict_rules import LABEL_RULE, LABELS, NOT_COMPARABLE
from longred_bench.results import read_records

pytestmark = pytest.mark.integration


@pytest.fixture
def one_thread():
    """One intra-op thread: the tiny model's small matmuls wait for busy cores otherwise."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_reproduce_pcd_smoke(tmp_path, monkeypatch, request, one_thread):
    ensure_cached(request, "brown", "austen", "sotu")
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
    # One verdict per line for PSA and short tasks; RULER per line and region (the original's
    # 512 and 1024 are beyond its 256-token window; pi:factor=4 has 512 within, 1024 at it).
    for claim, count in (("salience falls", 2), ("improves long-context retrieval", 2),
                         ("does not hurt short", 2)):  # fmt: skip
        lines = [x for x in md.splitlines()  # verdict lines: "- claim — `line`: **label** (...)"
                 if x.startswith("- ") and claim in x and " — `" in x]  # fmt: skip
        assert len(lines) == count, claim
        assert all(any(f"**{v}**" in x for v in LABELS) for x in lines)
        # The RULER floor: "not comparable" exactly where it says both are below the floor.
        if claim == "improves long-context retrieval":
            assert all((f"**{NOT_COMPARABLE}**" in x) == ("below the floor" in x)
                       for x in lines)  # fmt: skip
    assert LABEL_RULE in md
    assert "`original, beyond its window (256)`" in md
    assert "`pi:factor=4, within its window (1024)`" in md
    assert "| original +pcd |" in md and "| pi:factor=4 +pcd |" in md
    assert "## PCD's settings, chosen on the dev split" in md and "No number of the PCD paper" in md
    records = read_records(out / "pcd.jsonl.gz")
    parts = {(r["part"], r["line"], r["decoding"]) for r in records}
    for line in ("original", "pi:factor=4"):
        for dec in ("greedy", "pcd"):
            assert {("ruler", line, dec), ("short", line, dec), ("psa", line, dec)} <= parts
    # The dev grid ran on the dev line only, greedy (alpha 0) beside every grid setting.
    dev = {(r["line"], r["alpha"], r["local_fraction"]) for r in records if r["part"] == "dev"}
    assert dev == {("pi:factor=4", 0.0, None), ("pi:factor=4", 0.5, 0.25),
                   ("pi:factor=4", 3.0, 0.25)}  # fmt: skip
    chosen = [r["pcd"] for r in records if r["part"] == "ruler" and r["kind"] == "eval"
              and r["decoding"] == "pcd"]  # fmt: skip
    assert {(c["alpha"], c["window_rule"]) for c in chosen} <= {(0.5, "fraction 0.25"),
                                                               (3.0, "fraction 0.25")}  # fmt: skip
    assert len({c["alpha"] for c in chosen}) == 1  # one setting for every line
    assert "**" in next(x for x in md.splitlines() if x.startswith(f"| **{chosen[0]['alpha']:g}"))
    assert any(r["kind"] == "eval_item" and r["part"] == "short" for r in records)
    ruler_items = [r for r in records if r["kind"] == "eval_item" and r["part"] == "ruler"]
    assert ruler_items and all(isinstance(r["response"], str) for r in ruler_items)
    assert "## Where PCD loses" in md
    # Every unit kept its compute time, and the report counts them all with it.
    units = {r["unit"] for r in records}
    assert all((cache / "runs" / u / "timing.json").is_file() for u in units)
    assert all(isinstance(r["unit_seconds"], float) for r in records)
    assert f"Units: {len(units)}, computed at commits " in md and "compute recorded for" in md
    runs = sorted(p.name for p in (cache / "runs").iterdir())
    mtimes = {p: p.stat().st_mtime_ns for p in (cache / "runs").rglob("*.jsonl")}
    assert main(argv) == 0  # a rerun reuses every unit
    assert sorted(p.name for p in (cache / "runs").iterdir()) == runs
    assert {p: p.stat().st_mtime_ns for p in (cache / "runs").rglob("*.jsonl")} == mtimes
    # The report again from its records alone: the same report but for its call line.
    shutil.rmtree(cache / "runs")
    assert main([*argv, "--rebuild"]) == 0
    again = (out / "pcd.md").read_text()
    assert "report rebuilt from the records in `pcd.jsonl.gz`, computing nothing" in again
    assert again.splitlines()[3:] == md.splitlines()[3:] and again.splitlines()[:2] == \
        md.splitlines()[:2]  # fmt: skip


def test_pcd_lines_of_trained_checkpoints(tmp_path, monkeypatch, request, one_thread):
    """A profile's trained rows are trained (or reused from Table 3's cache) and become lines
    of their own (here the only ones), evaluated with their saved RoPE, greedy and PCD, in
    RULER, short and PSA. The profile is a user's file that extends smoke."""
    import yaml

    from longred_bench.reproduce.engine import reproduce

    ensure_cached(request, "brown", "austen", "sotu")
    real = cache_dir()
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "corpora").symlink_to(real / "corpora")
    monkeypatch.setenv("LONGRED_CACHE", str(cache))
    profile = tmp_path / "trainedpcd.yaml"
    pcd = {"ropes": [], "ruler_tasks": ["vt"], "lengths": [512], "ruler_samples": 1,
           "short_tasks": ["longred_tiny_nextsent"], "short_limit": 4, "psa_tasks": ["vt"],
           "psa_samples": 1, "grid_alphas": [1.0], "grid_fractions": [0.25], "dev_samples": 1,
           "dev_lengths": [512], "dev_lines": ["cpt abf:theta=1e5"],
           "trained": [["cpt", "abf:theta=1e5"]]}  # fmt: skip
    pcd["psa_tasks"] = ["niah_single_1"]
    profile.write_text(yaml.safe_dump({"extends": "smoke", "tables": {"pcd": pcd}}))
    out = tmp_path / "report"
    reproduce("pcd", profile, out, progress=False)
    records = read_records(out / "pcd.jsonl.gz")
    line = "cpt abf:theta=1e5"
    parts = {(r["part"], r["line"], r["decoding"]) for r in records}
    for dec in ("greedy", "pcd"):
        assert {("ruler", line, dec), ("short", line, dec), ("psa", line, dec)} <= parts
    models = {r["model"] for r in records if r["kind"] == "eval" and r["line"] == line}
    assert len(models) == 1 and models.pop().endswith("/final")
    assert len(list((cache / "runs").glob("train-cpt-*/final/config.json"))) == 1
    kept = [p for p in (cache / "runs").iterdir() if not p.name.startswith(".")]  # not locks
    assert all(p.name.startswith(("pcd-trainedpcd-", "train-")) for p in kept)
    # The cache moved elsewhere still holds every unit, those of the trained line included.
    moved = tmp_path / "moved-cache"
    cache.rename(moved)
    monkeypatch.setenv("LONGRED_CACHE", str(moved))
    reproduce("pcd", profile, out, progress=False)
    assert read_records(out / "pcd.jsonl.gz") == records
    now = [p.name for p in (moved / "runs").iterdir() if not p.name.startswith(".")]
    assert sorted(now) == sorted(p.name for p in kept)  # no unit computed under a new key
