"""A table's independent units of work in worker processes (``reproduce table3 --jobs N``).

The engine hands :func:`run_units_parallel` a list of :class:`Unit`: a module-level function, its
(picklable) arguments, a label, a relative cost, its key and the keys of the units it waits for.
They run in ``N`` spawned worker processes, each with ``cores / N`` torch threads, longest first
among those whose units waited for are done. Each unit writes its usual cache entry, so the pass
that assembles the table's records afterwards only reads them. Small models train
faster as two one-thread processes than as one two-thread process, which is what makes this
worth doing on a 2-core machine. A failed unit stops the pool with its error once the units
running beside it finish; Ctrl-C or SIGTERM ends the workers at once, and a worker whose
command's process is gone (``kill -9``) ends itself. A worker that dies (``kill -9``, the
out-of-memory killer) stops the pool with one line. Units already finished stay cached. The pool
knows nothing of any table.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing import get_context, get_start_method
from pathlib import Path
from typing import Any

from longred_bench.cache import take_warnings, warnings_given
from longred_bench.errors import UserError
from longred_bench.wording import counted


@dataclass(frozen=True)
class Unit:
    """One piece of work: ``fn(*args)`` (a module-level function, picklable arguments), named
    ``label`` in progress lines, scheduled by ``cost`` (largest first) once the units whose
    ``key`` is in ``after`` are done. ``keeps``: where it keeps its work as it goes, as
    ``("train", run folder)`` or ``("unit", work folder)``, named by the line an interrupt
    prints (:mod:`longred_bench.jobs.in_progress`)."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    label: str
    cost: float = 1.0
    key: str = ""
    after: tuple[str, ...] = ()
    keeps: tuple[str, Path] | None = None


def hours_text(hours: float, digits: int, word: str) -> str:
    """``hours`` at ``digits`` decimals and ``word``, or ``under 0.01 word`` where those would
    read 0 (a small model's plan said 0.00 GPU-h for every unit and 0.0 GPU-hours in all);
    ``0 word`` where nothing runs on a GPU."""
    floor = 10.0**-digits
    if hours == 0:  # nothing on a GPU
        return f"0 {word}"
    return f"{hours:.{digits}f} {word}" if hours >= floor / 2 else f"under {floor:g} {word}"


def duration(seconds: float | None) -> str:
    """``seconds`` in words: seconds (one decimal) under a minute, else minutes."""
    if seconds is None:
        return "unknown"
    if seconds < 59.95:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.1f} min"


def usable_cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def threads_per_job(jobs: int) -> int:
    """Torch threads each of ``jobs`` workers gets: the usable cores shared out, at least one."""
    return max(1, usable_cores() // jobs)


def opening_line(name: str, units: int, jobs: int) -> str:
    """The pool's first line: its units, processes and threads each, and where ``jobs`` is more
    than the usable cores, that the processes share them (each unit runs slower)."""
    line = (f"[{name}] {counted(units, 'unit')} in {counted(jobs, 'process')}, "
            f"{threads_per_job(jobs)} thread(s) each")  # fmt: skip
    cores = usable_cores()
    if jobs > cores:
        line += (f"; more processes than the {counted(cores, 'usable core')}: they share "
                 "them, so each unit runs slower")  # fmt: skip
    return line


def wall_note(jobs: int, load_start: float, *, forced: bool = False) -> str:
    """How a call's wall time was taken: its processes and threads, and the machine's 1-minute
    load average at its start (``load_start``) and now; ``forced``: a ``--force`` call, which
    reused no cached evaluation."""
    import torch

    threads = threads_per_job(jobs) if jobs != 1 else torch.get_num_threads()
    reuse = ("--force: every evaluation and measurement computed again, cached training runs "
             "reused" if forced else "cached units are reused")  # fmt: skip
    return (
        f"{jobs} process(es) of {threads} torch thread(s); 1-min load average "
        f"{load_start:.2f} at start, {os.getloadavg()[0]:.2f} at end; {reuse}, so this is the "
        "time of this call"
    )


def _init_worker(threads: int, start_method: str, warned: set[tuple[str, tuple]]) -> None:
    """A worker's set-up: its threads; no per-model loading bars or library deprecation
    warnings (the parent shows one bar over the units), nor the run cache's warnings the
    command gave (``warned``: a damaged unit it listed is named once, not again by the worker
    that computes it); the command's own ``start_method`` for
    what a unit starts or locks (lm-eval's bootstrap pool, tqdm's lock), as with ``--jobs 1``.
    A spawned process would otherwise keep ``spawn``, whose locks are named semaphores that the
    resource tracker calls leaked when the worker is ended on Ctrl-C or SIGTERM."""
    import multiprocessing
    import warnings

    import torch
    from transformers.utils import logging as hf_logging

    from longred_bench.heap import keep_freed_memory

    keep_freed_memory()  # a spawned worker does not run the command line's set-up
    take_warnings(warned)
    # Ctrl-C in a terminal reaches the workers too: the command's own process ends them, and a
    # worker that raised KeyboardInterrupt itself (one idle between units) printed
    # multiprocessing's "Process SpawnProcess-1:" beside the interrupted line. A handler, not
    # SIG_IGN, which a program the worker executes would inherit. SIGINT was blocked from the
    # worker's start (_starting_deaf_to_ctrl_c): one sent since is taken by the handler now.
    signal.signal(signal.SIGINT, _ctrl_c_is_the_parents)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    multiprocessing.set_start_method(start_method, force=True)
    _end_with_the_command(os.getppid())
    torch.set_num_threads(threads)
    hf_logging.disable_progress_bar()
    warnings.filterwarnings("ignore", category=FutureWarning)


def _end_with_the_command(parent: int) -> None:
    """End this worker once the command's process ``parent`` is gone (``kill -9``, the
    out-of-memory killer), as that process ends its workers on SIGTERM: a worker waits for its
    next unit from the parent, and would otherwise wait for good, an orphan holding its memory
    (and, for the unit it was computing, the unit's lock) long after the command had stopped."""
    import threading

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)  # SIGTERM handled by a unit that outlives it: as _stop_workers does
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="end-with-the-command", daemon=True).start()


def _ctrl_c_is_the_parents(signum: int, frame: Any) -> None:
    """A worker's SIGINT handler: nothing (the command's own process stops the pool)."""


@contextlib.contextmanager
def _starting_deaf_to_ctrl_c() -> Iterator[None]:
    """Workers started inside the block start with SIGINT blocked (a process inherits its
    signal mask) until their set-up (:func:`_init_worker`) hands it to
    :func:`_ctrl_c_is_the_parents`: a spawned interpreter interrupted while it starts prints its
    traceback. Blocked, not ignored: a Ctrl-C meanwhile reaches this process when the block
    ends (or at once, through another of its threads), never lost."""
    if not hasattr(signal, "pthread_sigmask"):  # not POSIX
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def longest_first(units: Sequence[Unit]) -> list[Unit]:
    """``units`` by cost, largest first (ties keep their order)."""
    return sorted(units, key=lambda u: u.cost, reverse=True)


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and end the worker processes, whose unfinished units leave
    only what the cache keeps of them (temporary folders, a training run's checkpoints)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())  # shutdown forgets them
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        proc.terminate()
    for proc in procs:
        proc.join(timeout=10)
        if proc.is_alive():  # it outlived SIGTERM: the pool's exit would wait for it
            proc.kill()
            proc.join()
    # The executor's manager thread closes its wakeup pipe once it sees the workers gone; where
    # that is still under way at exit, the interpreter's own wakeup writes to the closing pipe
    # and prints "Exception ignored ... Bad file descriptor" after the interrupted line.
    manager = getattr(pool, "_executor_manager_thread", None)
    if manager is not None:
        manager.join(timeout=10)


def _name_what_workers_kept(units: Iterable[Unit]) -> None:
    """Name the training runs and unit folders the interrupted workers kept work in, for this
    process's interrupted line (each worker measured its own: this process was measuring none)."""
    from longred_bench.jobs.in_progress import TRAINING_NOW, UNIT_NOW

    for unit in units:
        if unit.keeps is not None:
            (TRAINING_NOW if unit.keeps[0] == "train" else UNIT_NOW).append(unit.keeps[1])


def _worker_gone(procs: Iterable[Any], units: Iterable[Unit]) -> str:
    """The one line of a pool whose worker process died (``kill -9``, the out-of-memory killer):
    what ended it, the units that stopped, and that the same command resumes."""
    codes = sorted({p.exitcode for p in procs if p.exitcode not in (None, 0, -signal.SIGTERM)})
    how = ", ".join(f"signal {-c} ({signal.Signals(-c).name})" if c < 0 else f"exit status {c}"
                    for c in codes) or "killed"  # fmt: skip
    labels = "; ".join(sorted(u.label for u in units))
    return (f"a worker process ended while computing a unit ({how}; the system's "
            "out-of-memory killer sends SIGKILL), so the units in progress stopped "
            f"({labels}), each keeping what it had saved (a training run its checkpoints); "
            "finished units are kept in the run cache: run the same command again to resume "
            "(with fewer --jobs if memory ran out)")  # fmt: skip


def _run(unit: Unit) -> str:
    unit.fn(*unit.args)
    return unit.label


def run_units_parallel(
    units: Sequence[Unit],
    jobs: int,
    *,
    name: str,
    progress: bool = True,
    ready: Callable[[Unit], bool] | None = None,
) -> list[str]:
    """Run ``units`` in ``jobs`` worker processes (``name`` titles the lines), longest first
    among those whose ``after`` units of this batch are done; ``ready(unit)``, where given, is
    asked before a waiting unit starts (False: it is left for a later call). Returns the keys
    of the units that ran."""
    if jobs < 1:
        raise UserError(f"--jobs must be at least 1, got {jobs}")
    from tqdm.auto import tqdm

    waiting = longest_first(units)
    batch = {u.key for u in waiting}
    threads = threads_per_job(jobs)
    if progress:
        print(opening_line(name, len(waiting), jobs), flush=True)
    start = time.perf_counter()
    ctx = get_context("spawn")  # a fresh interpreter: no forked torch thread pools
    bar = tqdm(total=len(waiting), desc=f"{name} units", disable=not progress)
    done: list[str] = []
    running: dict[Any, Unit] = {}
    began: dict[Any, float] = {}  # when each running unit was handed to a free worker
    procs: dict[int, Any] = {}  # every worker started: the pool forgets one that died

    def startable(unit: Unit) -> bool:
        if any(k in batch and k not in done for k in unit.after):
            return False
        return ready is None or not unit.after or ready(unit)

    setup = (threads, get_start_method(), warnings_given())
    pool = ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_init_worker, initargs=setup)
    try:
        with pool:
            try:
                while True:
                    for unit in list(waiting):
                        if len(running) >= jobs:
                            break
                        if startable(unit):
                            waiting.remove(unit)
                            with _starting_deaf_to_ctrl_c():  # a worker may start here
                                fut = pool.submit(_run, unit)
                                running[fut], began[fut] = unit, time.perf_counter()
                            procs.update(getattr(pool, "_processes", None) or {})
                    if not running:
                        break  # what is left waits for units that did not run
                    finished, _ = wait(set(running), timeout=1, return_when=FIRST_COMPLETED)
                    if not finished and any(p.exitcode is not None for p in procs.values()):
                        # a worker died, which the pool itself does not always notice (it then
                        # waited for good): its other workers are ended, as on Ctrl-C
                        _stop_workers(pool)
                        gone = _worker_gone(procs.values(), running.values())
                        raise UserError(gone) from None
                    for fut in finished:
                        unit = running.pop(fut)
                        try:
                            fut.result()  # re-raises a worker's error here
                        except BrokenProcessPool:
                            _stop_workers(pool)  # joined: their exit codes are known
                            gone = [unit, *running.values()]
                            raise UserError(_worker_gone(procs.values(), gone)) from None
                        done.append(unit.key)
                        bar.update(1)
                        now, since = time.perf_counter(), began.pop(fut)
                        if progress:  # its own time, then the table's (the line said only that)
                            bar.write(
                                f"[{name}] done: {unit.label} in {duration(now - since)} "
                                f"({duration(now - start)} since the first started)"
                            )
            except BaseException as exc:  # a unit failed: the running ones finish, stay cached
                if isinstance(exc, KeyboardInterrupt):  # Ctrl-C or SIGTERM: no worker is left
                    _stop_workers(pool)
                for fut in running:
                    fut.cancel()
                raise
            finally:
                bar.close()
    except KeyboardInterrupt:  # also while the pool waits for the units beside a failed one
        _stop_workers(pool)
        _name_what_workers_kept(running.values())
        raise
    return done
