"""What this process is computing, for the line an interrupt prints
(:func:`longred_bench.cli.interrupt.interrupted_line`): the training run it trains (the line names
the checkpoint that run kept), the run-cache unit it measures (the line says what that unit
kept of its work: model responses, finished drift windows) and the file where ``compare``'s drift
run keeps its finished windows."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

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
