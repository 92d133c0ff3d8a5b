"""``reproduce table3 --profile smoke``: every row trained, evaluated with per-document scores,
reported beside the paper with verdicts; a rerun reuses every cached unit."""

from __future__ import annotations

import pytest

from longred_bench.cli import main
from longred_bench.errors import UserError
from longred_bench.results import read_records

pytestmark = pytest.mark.integration


def test_reproduce_table3_smoke(tmp_path, smoke_cache, monkeypatch):
    out = tmp_path / "report"
    argv = ["reproduce", "table3", "--profile", "smoke", "--out", str(out), "--quiet"]
    assert main([*argv, "--jobs", "2"]) == 0  # the units in two worker processes
    md = (out / "table3.md").read_text()
    assert "profile `smoke`" in md and "LongReD-C" in md and "Llama-3-8B" in md
    assert "## Verdicts" in md
    records = read_records(out / "table3.jsonl.gz")
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
    # A serial rerun trains and evaluates nothing again: identical records (provenance
    # included), so the workers left every unit in the cache the serial pass reads.
    assert main(argv) == 0
    again = read_records(out / "table3.jsonl.gz")
    assert again == records
    # The cache moved to another folder (a cluster's results copied home) still holds every
    # unit: the evaluations of trained checkpoints, which name them by path, included.
    moved = tmp_path / "moved-cache"
    smoke_cache.rename(moved)
    monkeypatch.setenv("LONGRED_CACHE", str(moved))
    assert main(argv) == 0
    got = read_records(out / "table3.jsonl.gz")
    assert {r["train"]["dir"].startswith(str(moved)) for r in got if r["train"]} == {True}
    assert [_here(r) for r in got] == [_here(r) for r in records]  # same results, provenance too


def _here(record: dict) -> dict:
    """``record`` without where its training run's folder is now (the one value a move changes)."""
    return {**record, "train": record["train"] and {**record["train"], "dir": None}}


def test_table3_steps_cover_every_run_and_its_evaluations_after_it():
    """Every run of the grid is a training step; each evaluation of a checkpoint waits for its
    run; the pool orders them longest first (LinearARD runs first)."""
    from profile_helpers import ctx_of

    from longred_bench.reproduce.grid import trained_rows
    from longred_bench.reproduce.pool import Unit, longest_first
    from longred_bench.reproduce.table3 import SPEC

    ctx = ctx_of("table3")
    grid, steps = SPEC.grid(ctx), SPEC.steps(ctx)
    trains = [s for s in steps if s.unit.kind == "train"]
    # every run, and the light CPT run each LinearARD run starts from (once per extension, seed)
    light = [s for s in trains if s.label.startswith("train cpt-light")]
    linearard = [r for r in trained_rows(grid) if r.row == "linearard"]
    assert len(light) == len(linearard) and light
    assert len(trains) == len(trained_rows(grid)) + len(light) == len({s.key for s in trains})
    folders = {s.key for s in trains}
    evals = [s for s in steps if s.unit.kind == "eval"]
    base = [s for s in evals if not s.after]
    assert len(base) == 2 * (1 + len(grid.extensions))
    assert all(s.after[0] in folders and s.train == s.after[0] for s in evals if s.after)
    units = longest_first([Unit(print, (), s.label, s.cost, s.key, s.after) for s in steps])
    assert [u.label.split()[1] for u in units[:2]] == ["linearard", "linearard"]


def test_reproduce_jobs_bad_input(capsys, tmp_path):
    argv = ["reproduce", "table3", "--profile", "smoke", "--jobs", "0", "--out", str(tmp_path)]
    assert main(argv) == 2
    assert "--jobs must be at least 1" in capsys.readouterr().err


def test_damaged_training_records_resume_or_retrain(tmp_path, monkeypatch, capsys):
    from longred_bench.jobs.units import train_cached
    from longred_bench.training.config import resolve_config

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    cfg = resolve_config("cpt", profile="smoke", overrides={"long_data": "random"})
    final, info = train_cached(cfg, progress=False)
    run_dir = final.parent
    weights = (final / "model.safetensors").read_bytes()
    # run.json cut short: resumed from the last checkpoint, same weights, a warning names it.
    (run_dir / "run.json").write_text('{"tokens": 12')
    again, info2 = train_cached(cfg, progress=False)
    assert "run.json is damaged" in capsys.readouterr().err
    assert again == final and info2["steps"] == info["steps"] == cfg.steps
    assert (again / "model.safetensors").read_bytes() == weights
    # No checkpoint and damaged metrics: trained again from the start, into place.
    import shutil

    shutil.rmtree(run_dir / "checkpoints")
    (run_dir / "metrics.jsonl").write_text("{not json\n")
    third, info3 = train_cached(cfg, progress=False)
    assert "metrics.jsonl is damaged" in capsys.readouterr().err
    assert info3["steps"] == cfg.steps and (third / "model.safetensors").read_bytes() == weights
    # Killed while writing step 3's metrics line, before its checkpoint: the cut line is left
    # out and step 3 trained again from step 2's checkpoint (it raised a JSON error before).
    checkpoints = sorted(p.name for p in (run_dir / "checkpoints").glob("step-*"))
    assert checkpoints[-2:] == ["step-000002", "step-000003"], checkpoints
    shutil.rmtree(run_dir / "checkpoints" / "step-000003")
    (run_dir / "checkpoints" / "latest").write_text("step-000002")
    shutil.rmtree(run_dir / "final")
    metrics = run_dir / "metrics.jsonl"
    metrics.write_bytes(metrics.read_bytes()[:-40])
    fourth, info4 = train_cached(cfg, progress=False)
    assert info4["steps"] == cfg.steps and (fourth / "model.safetensors").read_bytes() == weights
    # A first try killed before its first checkpoint: the retry trains in the run's own folder
    # (its checkpoints survive another interruption); the old folder waits aside until then.
    from longred_bench.jobs import train

    for child in run_dir.iterdir():
        if child.name not in ("config.yaml", "metrics.jsonl"):
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    into, real = [], train.run_training

    def recording(cfg, out, **kw):
        into.append((out, (out.parent / f".{out.name}.replaced").is_dir()))
        return real(cfg, out, **kw)

    monkeypatch.setattr(train, "run_training", recording)
    fifth, _ = train_cached(cfg, progress=False)
    assert into == [(run_dir, True)] and fifth == final
    assert (fifth / "model.safetensors").read_bytes() == weights
    assert not (run_dir.parent / f".{run_dir.name}.replaced").exists()


def test_two_processes_needing_one_run_train_it_once(tmp_path, monkeypatch, capsys):
    """Two callers that need the same run at once (two ``reproduce`` calls sharing a CPT run)
    train it once: the second waits on the run's lock, says so, and finds it finished."""
    import threading

    from longred_bench.jobs import train
    from longred_bench.jobs.units import train_cached
    from longred_bench.training.config import resolve_config

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    cfg = resolve_config("cpt", profile="smoke", overrides={"long_data": "random"})
    calls, real, started = [], train.run_training, threading.Event()

    def recording(cfg, out, **kw):
        calls.append(out)
        started.set()
        return real(cfg, out, **kw)

    monkeypatch.setattr(train, "run_training", recording)
    got: list = []
    outcomes: list[str] = []
    first = threading.Thread(
        target=lambda: got.append(train_cached(cfg, progress=False, outcome=outcomes))
    )
    first.start()
    assert started.wait(timeout=60)  # the first caller is training; the second arrives now
    second = train_cached(cfg, progress=False, outcome=outcomes)
    first.join(timeout=120)
    assert len(calls) == 1 and got == [second]
    assert outcomes == ["computed", "taken"]  # what each says it did
    assert second[1]["steps"] == cfg.steps
    assert len(read_records(second[0].parent / "metrics.jsonl")) == cfg.steps
    assert "another process is training" in capsys.readouterr().out
    lock = second[0].parent.parent / f".{second[0].parent.name}.lock"
    lock.unlink()  # a finished run is read without its lock (a read-only cache serves it)
    assert train_cached(cfg, progress=False) == second and not lock.exists()


def test_an_interrupted_run_resumes_after_the_cache_moved(tmp_path, monkeypatch):
    """A LinearARD run starting from a light CPT run's checkpoint (``init``, a path in the
    cache), interrupted, then the cache moved (a cluster's scratch to another): it resumes there,
    to the weights of an uninterrupted run, instead of being refused as a run of another config."""
    import shutil

    from longred_bench.jobs.units import train_cached
    from longred_bench.training.config import resolve_config

    def runs() -> tuple:
        cpt = resolve_config("cpt", profile="smoke", overrides={"long_data": "random"})
        light, _ = train_cached(cpt, progress=False)
        return resolve_config("linearard", profile="smoke",
                              overrides={"init": str(light), "rope": cpt.rope})  # fmt: skip

    before = tmp_path / "scratch" / "cache"
    monkeypatch.setenv("LONGRED_CACHE", str(before))
    final, info = train_cached(runs(), progress=False)
    weights = (final / "model.safetensors").read_bytes()
    run = final.parent  # interrupted after its second step's checkpoint, before the third
    shutil.rmtree(final)
    (run / "run.json").unlink()
    assert sorted(p.name for p in (run / "checkpoints").glob("step-*"))[-1] == "step-000003"
    shutil.rmtree(run / "checkpoints" / "step-000003")
    (run / "checkpoints" / "latest").write_text("step-000002")
    metrics = (run / "metrics.jsonl").read_text().splitlines(keepends=True)
    (run / "metrics.jsonl").write_text("".join(metrics[:2]))

    after = tmp_path / "home" / "cache"
    after.parent.mkdir()
    before.rename(after)
    monkeypatch.setenv("LONGRED_CACHE", str(after))
    cfg = runs()  # the light run is found where it is now; the student's run resumes
    moved = after / run.relative_to(before)
    saved = (moved / "config.yaml").read_text()
    (moved / "config.yaml").write_text(saved.replace("seed: 0", "seed: 1"))
    with pytest.raises(UserError, match="another config"):  # only the moved path is followed
        train_cached(cfg, progress=False)
    (moved / "config.yaml").write_text(saved)
    again, info2 = train_cached(cfg, progress=False)
    assert again == moved / "final" and info2["steps"] == info["steps"]
    assert len(read_records(moved / "metrics.jsonl")) == info["steps"]  # step 3 trained again
    assert (again / "model.safetensors").read_bytes() == weights
