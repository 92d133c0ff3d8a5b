"""The ``--jobs`` worker pool: the line a dead worker stops the command with (how each worker
ended, the units in progress in name order), the thread count the wall-time note names, what a
worker is set up with (its share of the cores, the command's start method, Ctrl-C left to the
command's process and not blocked for what it runs, library warnings off), and the order units
run in: longest first among those whose units waited for are done, one at a time per worker,
each named in a done line, the keys of those that ran returned."""

from __future__ import annotations

import contextlib
import io
import json
import signal
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from longred_bench.reproduce import pool
from longred_bench.reproduce.pool import Unit, run_units_parallel


def _units(*labels: str) -> list[Unit]:
    return [Unit(print, (), label) for label in labels]


def test_a_dead_workers_line_names_each_way_a_worker_ended() -> None:
    """Signals by name and exit statuses as numbers, once each in order; a worker ended by the
    pool's own SIGTERM, one still running and one that exited cleanly are not named."""
    procs = [SimpleNamespace(exitcode=c) for c in (None, 0, -signal.SIGTERM, 3, -9, -9)]
    line = pool._worker_gone(procs, _units("b", "a"))
    assert line.startswith(
        "a worker process ended while computing a unit (signal 9 (SIGKILL), exit status 3; "
    )
    assert "so the units in progress stopped (a; b), each keeping" in line


def test_a_dead_worker_with_no_exit_status_is_said_to_be_killed() -> None:
    """Where no worker's exit status says more, the line says the worker was killed."""
    procs = [SimpleNamespace(exitcode=None), SimpleNamespace(exitcode=-signal.SIGTERM)]
    line = pool._worker_gone(procs, _units("u"))
    assert line.startswith("a worker process ended while computing a unit (killed; ")
    assert line.endswith("run the same command again to resume (with fewer --jobs if memory "
                         "ran out)")  # fmt: skip


def test_the_wall_note_names_the_threads_each_process_had(monkeypatch) -> None:
    """One process: the command's own torch threads; several: each worker's share."""
    import torch

    monkeypatch.setattr(pool, "usable_cores", lambda: 8)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 3)
    assert pool.wall_note(1, 0.5).startswith("1 process(es) of 3 torch thread(s); ")
    assert pool.wall_note(2, 0.5).startswith("2 process(es) of 4 torch thread(s); ")


def _setup_seen(path: str) -> dict:
    """What the worker running this was set up with."""
    import multiprocessing
    import os
    import warnings

    import torch
    from transformers.utils import logging as hf_logging

    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C in the terminal: the command's to handle
    with warnings.catch_warnings(record=True) as said:
        warnings.warn("deprecated", FutureWarning, stacklevel=1)
    return {
        "threads": torch.get_num_threads(),
        "start_method": multiprocessing.get_start_method(),
        "sigint_blocked": signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []),
        "future_warnings": len(said),
        "progress_bars": hf_logging.is_progress_bar_enabled(),
    }


def _log(path: str, label: str) -> None:
    """A worker's task: append ``label`` to ``path``, and the worker's set-up beside it."""
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(label + "\n")
    Path(f"{path}.{label}.json").write_text(json.dumps(_setup_seen(path)))


class _Clock:
    """The pool's clock: 10 s pass at each reading (its ``sleep`` is the real one)."""

    def __init__(self) -> None:
        self.now = -10.0

    def perf_counter(self) -> float:
        self.now += 10.0
        return self.now

    @staticmethod
    def sleep(seconds: float) -> None:
        time.sleep(seconds)


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One worker (of 3 usable cores) ran ``first`` (cost 3), ``cheap`` (1) and ``after`` (2,
    waiting for ``first``), with progress lines: the keys returned, the order they ran in,
    what the command printed and what each worker was set up with."""
    log = tmp_path_factory.mktemp("pool") / "log"
    work = [
        Unit(_log, (str(log), "first"), "first", cost=3.0, key="f"),
        Unit(_log, (str(log), "cheap"), "cheap", cost=1.0, key="c"),
        Unit(_log, (str(log), "after"), "after", cost=2.0, key="a", after=("f",)),
    ]
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out):
        mp.setattr(pool, "usable_cores", lambda: 3)
        mp.setattr(pool, "time", _Clock())
        keys = run_units_parallel(work, 1, name="t", progress=True)
    return {
        "keys": keys,
        "order": log.read_text().split(),
        "out": out.getvalue(),
        "seen": json.loads(Path(f"{log}.first.json").read_text()),
        "sigint_blocked": signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []),
    }


@pytest.mark.integration
def test_a_worker_is_set_up_as_the_command_is(ran: dict) -> None:
    """A worker has its share of the cores, the command's start method (for the locks and
    pools a unit makes), survives a Ctrl-C sent to it, leaves SIGINT unblocked for the programs
    it runs, and shows neither library deprecation warnings nor loading bars."""
    import multiprocessing

    assert ran["seen"] == {
        "threads": 3,
        "start_method": multiprocessing.get_start_method(),
        "sigint_blocked": False,
        "future_warnings": 0,
        "progress_bars": False,
    }


@pytest.mark.integration
def test_one_worker_runs_the_longest_ready_unit_next(ran: dict) -> None:
    """With one worker, a unit that became ready when the first finished runs before a cheaper
    one that was ready all along (no unit is handed on before a worker is free), and the keys
    (not labels) of the units that ran are returned, in that order."""
    assert ran["order"] == ["first", "after", "cheap"]
    assert ran["keys"] == ["f", "a", "c"]


@pytest.mark.integration
def test_the_pool_names_each_finished_unit_and_gives_ctrl_c_back(ran: dict) -> None:
    """A line opens the run and one names each finished unit as it finishes; afterwards Ctrl-C
    reaches the command's process again (it is held while a worker starts)."""
    assert ran["out"].startswith("[t] 3 units in 1 process, 3 thread(s) each\n")
    done = [line for line in ran["out"].splitlines() if " done: " in line]
    # each unit's own time from when a worker took it, then the table's (the line gave only
    # the table's, which read as the unit's own: a 1.5 s unit "done (2.3 min)")
    assert done == ["[t] done: first in 10.0 s (20.0 s since the first started)",
                    "[t] done: after in 10.0 s (40.0 s since the first started)",
                    "[t] done: cheap in 10.0 s (1.0 min since the first started)"]  # fmt: skip
    assert not ran["sigint_blocked"]


def test_more_processes_than_cores_are_said_to_share_them(monkeypatch) -> None:
    """``--jobs 8`` on two cores gave no word that eight processes share two cores."""
    from longred_bench.reproduce import pool

    monkeypatch.setattr(pool, "usable_cores", lambda: 2)
    assert pool.opening_line("t", 3, 2) == "[t] 3 units in 2 processes, 1 thread(s) each"
    assert pool.opening_line("t", 1, 8) == (
        "[t] 1 unit in 8 processes, 1 thread(s) each; more processes than the 2 usable cores: "
        "they share them, so each unit runs slower"
    )
