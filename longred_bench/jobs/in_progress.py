"""The training run this process is training, for the line an interrupt prints: it names the
checkpoint that run kept (:func:`longred_bench.cli.interrupt.interrupted_line`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

TRAINING_NOW: list[Path] = []
"""The folder of the training run this process is training, while it trains (left set when
it is interrupted: the interrupted line names its checkpoint; cleared when it ends otherwise)."""


@contextlib.contextmanager
def training_now(run_dir: Path) -> Iterator[None]:
    """Within the block :data:`TRAINING_NOW` names ``run_dir``; after it, nothing, unless the
    block was interrupted (KeyboardInterrupt, SIGTERM's): the interrupted line reads it then."""
    TRAINING_NOW[:] = [run_dir]
    try:
        yield
    except Exception:  # a failure: no run is in progress any more
        TRAINING_NOW.clear()
        raise
    TRAINING_NOW.clear()
