"""A one-line progress summary at least every minute while a command runs with ``--quiet``.

:func:`heartbeat` prints ``describe()`` and the time elapsed every :data:`HEARTBEAT_SECONDS`
from a background thread, to the standard output the command started with (lm-eval's quiet
mode points ``sys.stdout`` at nothing while it runs). ``describe`` reads the command's progress
from what it has saved so far (responses in the request cache, finished units, drift windows),
so the line says what is really done.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator

from longred_bench.reports import duration

HEARTBEAT_SECONDS = 60.0


@contextlib.contextmanager
def heartbeat(describe: Callable[[], str], *, enabled: bool = True) -> Iterator[None]:
    """Print ``describe()`` with the elapsed time every :data:`HEARTBEAT_SECONDS` inside the
    block (nothing when not ``enabled``)."""
    if not enabled:
        yield
        return
    out, every, start = sys.stdout, HEARTBEAT_SECONDS, time.perf_counter()
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(every):
            try:
                line = describe()
            except Exception as exc:  # a progress line must never stop the command
                line = f"(progress unreadable: {type(exc).__name__})"
            print(f"{line}; {duration(time.perf_counter() - start)} so far", file=out, flush=True)

    thread = threading.Thread(target=beat, name="heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)
