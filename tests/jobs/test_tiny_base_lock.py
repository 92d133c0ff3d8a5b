"""Workers that need tiny-base at once (``reproduce --jobs 2`` from an empty cache) build it
once: the others wait on the build's lock and then find the model."""

from __future__ import annotations

import contextlib
import threading
import time

from longred_bench.cache import build_lock
from longred_bench.jobs import tiny_base


def test_a_second_holder_of_the_build_lock_waits_for_the_first(tmp_path):
    order: list[str] = []

    def second() -> None:
        with build_lock(tmp_path / "entry"):
            order.append("second")

    with build_lock(tmp_path / "entry"):
        waiter = threading.Thread(target=second)
        waiter.start()
        time.sleep(0.3)
        order.append("first")
    waiter.join(timeout=10)
    assert order == ["first", "second"]


def _twice_at_once(call) -> list:
    """What ``call`` returns in each of two threads started together (in the order they end)."""
    got: list = []
    workers = [threading.Thread(target=lambda: got.append(call())) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=30)
    return got


def test_parallel_callers_build_tiny_base_once(tmp_path, monkeypatch):
    run = tmp_path / "tiny-base-x"
    builds: list[int] = []

    def fake_training(cfg, out, *, resume, progress):
        builds.append(1)
        time.sleep(0.3)  # the other caller arrives during the build
        final = out / "final"
        final.mkdir(parents=True)
        (final / "config.json").write_text("{}")
        return final

    monkeypatch.setattr(tiny_base, "tiny_base_run_dir", lambda: run)
    monkeypatch.setattr("longred_bench.jobs.train.run_training", fake_training)
    got = _twice_at_once(lambda: tiny_base.tiny_base_dir(progress=False))
    assert builds == [1] and got == [run / "final", run / "final"]


def test_a_waiting_builder_says_so_and_gets_the_lock_after_a_failed_build(
    tmp_path, capsys, monkeypatch
):
    import longred_bench.cache as cache_module

    taken, said = threading.Event(), threading.Event()

    def say(*args, **kwargs) -> None:  # the waiting builder's line: the first build then fails
        print(*args, **kwargs)
        said.set()

    def failing() -> None:
        with build_lock(tmp_path / "entry"):
            taken.set()
            said.wait(timeout=30)
            raise RuntimeError("build failed")

    monkeypatch.setattr(cache_module, "print", say, raising=False)
    first = threading.Thread(target=lambda: _swallow(failing))
    first.start()
    assert taken.wait(timeout=30)
    with build_lock(tmp_path / "entry", "waiting for the other build"):
        got = "locked"
    first.join(timeout=10)
    assert got == "locked" and "waiting for the other build" in capsys.readouterr().out


def _swallow(fn) -> None:
    with contextlib.suppress(RuntimeError):
        fn()


def test_a_file_system_without_locks_builds_unlocked(tmp_path, monkeypatch):
    import fcntl

    def refuse(*args):
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(fcntl, "flock", refuse)
    with build_lock(tmp_path / "entry"):
        ran = True
    assert ran


def test_two_callers_of_one_evaluation_unit_compute_it_once(tmp_path, monkeypatch, capsys):
    """Two array tasks (or calls) of one evaluation unit at once: the second waits for the
    first, says so, and returns its records instead of computing them again."""
    from longred_bench.jobs import unit_compute, units

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    calls: list[int] = []

    def compute(kind, config, progress, work):
        calls.append(1)
        time.sleep(0.5)  # the other caller arrives meanwhile
        return [{"kind": "eval", "task": "t", "metric": "acc", "value": 0.5}]

    monkeypatch.setattr(unit_compute, "compute", compute)
    unit = units.CachedUnit("eval", "runs/x/unit", {"model": "tiny-random", "suite": "short"})
    outcomes: list[str] = []
    got = _twice_at_once(lambda: unit.run(progress=False, outcome=outcomes))
    assert len(calls) == 1 and len(got) == 2
    assert [r["value"] for r in got[0]] == [r["value"] for r in got[1]] == [0.5]
    assert "waiting for another process computing runs/x/unit" in capsys.readouterr().out
    assert sorted(outcomes) == ["computed", "taken"]  # what each caller says it did
    again: list[str] = []
    unit.run(progress=False, outcome=again)
    assert again == ["cached"]


def test_a_build_says_how_long_it_takes_and_a_resumed_one_says_it_resumes(
    tmp_path, monkeypatch, capsys
):
    """``building tiny-base in DIR (cached for later runs)`` said nothing of its 15 minutes or
    that Ctrl-C keeps its checkpoints; a build resumed from them read as a new one."""
    run = tmp_path / "tiny-base-x"
    resumed: list[bool] = []

    def fake_training(cfg, out, *, resume, progress):
        resumed.append(resume)
        (out / "final").mkdir(parents=True)
        (out / "final" / "config.json").write_text("{}")
        return out / "final"

    monkeypatch.setattr(tiny_base, "tiny_base_run_dir", lambda: run)
    monkeypatch.setattr("longred_bench.jobs.train.run_training", fake_training)
    monkeypatch.setattr(tiny_base, "write_manifest", lambda *a: None)
    checkpoints: list = [None]
    monkeypatch.setattr("longred_bench.training.checkpoint.latest_checkpoint",
                        lambda out: checkpoints[0])  # fmt: skip
    tiny_base.tiny_base_dir(progress=False)
    said = capsys.readouterr().out
    assert said.startswith(f"building tiny-base in {run} (about 15 min on 2 CPU cores, once")
    assert "Ctrl-C keeps its checkpoints, and the next call resumes from them)" in said
    import shutil

    shutil.rmtree(run / "final")
    checkpoints[0] = run / "checkpoints" / "step-000010"
    tiny_base.tiny_base_dir(progress=False)
    assert capsys.readouterr().out.startswith(f"resuming the build of tiny-base in {run} (about")
    assert resumed == [False, True]
