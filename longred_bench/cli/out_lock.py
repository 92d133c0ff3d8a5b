"""One run at a time in an output folder: ``eval``, ``compare``, ``drift``, ``psa`` and ``train``
hold a lock on their ``--out`` while they run, so a second run into the same folder stops in one
line instead of writing over the first's results (or failing in a traceback on a response cache
the first had removed). The lock is a file ``.<folder name>.lock`` beside the folder (the folder
itself is made only once the command's checks pass)."""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

LOCKED = ("eval", "compare", "drift", "psa", "train")
"""The commands that lock their ``--out``."""


@contextlib.contextmanager
def out_lock(args: argparse.Namespace) -> Iterator[None]:
    """Hold the lock on ``args.out`` for the block where ``args`` is a run (not a dry run) of
    one of :data:`LOCKED`, in its first process (``torchrun``'s others share the run); a folder
    another run holds is a one-line error."""
    out = getattr(args, "out", None)
    rank = os.environ.get("RANK", "0")  # torchrun's processes of one run: the first locks
    if args.command not in LOCKED or not out or getattr(args, "dry_run", False) or rank != "0":
        yield
        return
    from longred_bench.cache import build_lock

    path = Path(out)
    if not path.parent.is_dir():  # a new folder tree: nothing runs there yet, nothing is made
        yield
        return
    busy = (f"--out {path} is in use by another {args.command} run (still running?): wait for it "
            "to end, or give another --out")  # fmt: skip
    with build_lock(path, busy=busy):
        yield
