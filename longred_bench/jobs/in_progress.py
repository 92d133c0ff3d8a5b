"""What this process is computing, for the line an interrupt prints
(:func:`longred_bench.cli.interrupt.interrupted_line`): the training run it trains (the line names
the checkpoint that run kept), the run-cache unit it measures (the line says what that unit
kept of its work: model responses, finished drift windows) and the file where ``compare``'s drift
run keeps its finished windows.

It also reads what such work left on disk without importing torch
(:func:`partial_windows`, :func:`kept_checkpoint`): an interrupt that arrives while torch is
being imported leaves it half imported, and the interrupted line must still say what was kept."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

PARTIAL = "drift.partial.json"
"""Beside a drift run's results while it runs: the per-text sums of the windows measured so far
(``jobs.drift``'s ``PARTIAL``, which keeps its own copy of these names and of
:func:`partial_windows`: a change to that module's source would key every cached drift unit
anew, computing it again)."""

CHECKPOINT_FILES = ("student.safetensors", "state.pt")
"""The files of a whole training checkpoint (``training.checkpoint``'s ``WEIGHTS`` and
``STATE``)."""

TRAINING_NOW: list[Path] = []
"""The folder of the training run this process is training, while it trains (left set when
it is interrupted: the interrupted line names its checkpoint; cleared when it ends otherwise)."""

UNIT_NOW: list[Path] = []
"""The folder where the run-cache unit this process measures keeps its work as it goes
(:func:`longred_bench.jobs.units.CachedUnit.run`), set as :data:`TRAINING_NOW` is."""

DRIFT_NOW: list[Path] = []
"""The file where the drift run of ``compare`` this process measures keeps its finished windows
(:func:`longred_bench.jobs.compare.run_compare`'s drift unit), set as :data:`TRAINING_NOW` is:
other calls' files beside it (other models or settings) are not this call's work."""


@contextlib.contextmanager
def _now(held: list[Path], path: Path) -> Iterator[None]:
    held[:] = [path]
    try:
        yield
    except Exception:  # a failure: nothing is in progress any more
        held.clear()
        raise
    held.clear()


def training_now(run_dir: Path) -> contextlib.AbstractContextManager[None]:
    """Within the block :data:`TRAINING_NOW` names ``run_dir``; after it, nothing, unless the
    block was interrupted (KeyboardInterrupt, SIGTERM's): the interrupted line reads it then."""
    return _now(TRAINING_NOW, run_dir)


def unit_now(work: Path) -> contextlib.AbstractContextManager[None]:
    """Within the block :data:`UNIT_NOW` names ``work``, as :func:`training_now` does."""
    return _now(UNIT_NOW, work)


def drift_now(partial: Path) -> contextlib.AbstractContextManager[None]:
    """Within the block :data:`DRIFT_NOW` names ``partial``, as :func:`training_now` does."""
    return _now(DRIFT_NOW, partial)


def partial_windows(path: Path) -> int:
    """How many windows an interrupted drift run saved at ``path`` had measured (0 when none)."""
    try:
        texts = json.loads(path.read_text())["texts"]
        return min((len(rows) for rows in texts.values()), default=0)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return 0


def kept_checkpoint(run_dir: Path) -> Path | None:
    """The newest whole checkpoint of training run ``run_dir``, or None: the one a resume
    takes (``training.checkpoint.latest_checkpoint``), found without importing torch."""
    root = run_dir / "checkpoints"
    steps = sorted(root.glob("step-[0-9]*")) if root.is_dir() else []
    whole = [p for p in steps if all((p / name).is_file() for name in CHECKPOINT_FILES)]
    return whole[-1] if whole else None
