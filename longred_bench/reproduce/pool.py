"""Table 3's independent runs in worker processes: ``reproduce table3 --jobs N``.

The table is a set of independent units: evaluations of the base model (original and zero-shot
RoPE) and training runs, each followed by its own evaluations. With ``jobs > 1`` these units run
in ``N`` spawned worker processes, each with ``cores / N`` torch threads, longest first; every
unit writes its usual cache entry (``runs/train-*``, ``runs/table3-eval/*``), so the serial pass
that assembles the records afterwards only reads them. Small models train faster as two
one-thread processes than as one two-thread process, which is what makes this worth doing on a
2-core machine. A failed unit stops the pool with its error; units already finished stay cached.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from multiprocessing import get_context
from typing import Any

from longred_bench.errors import UserError

# Relative cost of a unit, for longest-first scheduling (measured at profile tiny: a LinearARD
# run takes about 2.5x a CPT run; an evaluation of one model about a third of a CPT run).
UNIT_COST = {"linearard": 3.0, "eval": 0.4}


def usable_cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def threads_per_job(jobs: int) -> int:
    """Torch threads each of ``jobs`` workers gets: the usable cores shared out, at least one."""
    return max(1, usable_cores() // jobs)


def _init_worker(threads: int) -> None:
    """A worker's set-up: its threads; no per-model loading bars or library deprecation
    warnings (the parent shows one bar over the units)."""
    import warnings

    import torch
    from transformers.utils import logging as hf_logging

    from longred_bench.heap import keep_freed_memory

    keep_freed_memory()  # a spawned worker does not run the command line's set-up
    torch.set_num_threads(threads)
    hf_logging.disable_progress_bar()
    warnings.filterwarnings("ignore", category=FutureWarning)


def table3_units(profile: str) -> list[tuple[str, Any]]:
    """The table's independent units, longest first: ``("eval", (unit, labels))`` for the base
    model's evaluations, ``("train", TrainedRow)`` for a training run and its evaluations."""
    from longred_bench.reproduce.table3 import TABLE3_PROFILES, base_eval_units, trained_rows

    prof = TABLE3_PROFILES[profile]
    units: list[tuple[str, Any]] = [("eval", u) for u in base_eval_units(prof)]
    units += [("train", run) for run in trained_rows(prof)]

    def cost(item: tuple[str, Any]) -> float:
        kind, what = item
        return UNIT_COST["eval"] if kind == "eval" else UNIT_COST.get(what.row, 1.0)

    return sorted(units, key=cost, reverse=True)  # stable: ties keep the table's order


def run_unit(profile: str, kind: str, what: Any) -> str:
    """Run one unit in this process (its results land in the cache); returns its label."""
    from longred_bench.reproduce.table3 import TABLE3_PROFILES, evaluate_cached, trained_row_records

    prof = TABLE3_PROFILES[profile]
    if kind == "eval":
        unit, labels = what
        evaluate_cached(unit, labels, progress=False)
        return f"eval {labels['row']} {labels['extension'] or ''} {unit['suite']}".strip()
    trained_row_records(prof, what, progress=False)
    return f"train {what.row} {what.extension or 'original RoPE'} seed {what.seed}"


def run_units_parallel(profile: str, jobs: int, *, progress: bool = True) -> None:
    """Run every unit of Table 3 at ``profile`` in ``jobs`` worker processes."""
    if jobs < 1:
        raise UserError(f"--jobs must be at least 1, got {jobs}")
    from tqdm.auto import tqdm

    units = table3_units(profile)
    threads = threads_per_job(jobs)
    if progress:
        print(f"[table3] {len(units)} units in {jobs} processes, {threads} thread(s) each",
              flush=True)  # fmt: skip
    start = time.perf_counter()
    ctx = get_context("spawn")  # a fresh interpreter: no forked torch thread pools
    bar = tqdm(total=len(units), desc="table3 units", disable=not progress)
    with ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_init_worker,
                             initargs=(threads,)) as pool:  # fmt: skip
        pending = {pool.submit(run_unit, profile, kind, what) for kind, what in units}
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    label = fut.result()  # re-raises a worker's error here
                    bar.update(1)
                    if progress:
                        minutes = (time.perf_counter() - start) / 60
                        bar.write(f"[table3] done: {label} ({minutes:.1f} min)")
        except BaseException:
            for fut in pending:
                fut.cancel()
            raise
        finally:
            bar.close()
