"""One run at a time in an output folder: ``eval``, ``compare``, ``drift``, ``psa`` and ``train``
hold a lock on their ``--out`` while they run, so a second run into the same folder stops in one
line instead of writing over the first's results (or failing in a traceback on a response cache
the first had removed). The lock is a file ``.<folder name>.lock`` beside the folder (the folder
itself is made only once the command's checks pass), removed when the run ends."""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from longred_bench.errors import UserError

LOCKED = ("eval", "compare", "drift", "psa", "train")
"""The commands that lock their ``--out``."""


@contextlib.contextmanager
def out_lock(args: argparse.Namespace) -> Iterator[None]:
    """Hold the lock on ``args.out`` for the block where ``args`` is a run (not a dry run) of
    one of :data:`LOCKED`, in its first process (``torchrun``'s others share the run); a folder
    another run holds is a one-line error. Where the folder's parent does not exist yet, locks
    are not supported (no ``fcntl``, a file system that refuses them) or the lock file cannot
    be made, the block runs unlocked."""
    out = getattr(args, "out", None)
    rank = os.environ.get("RANK", "0")  # torchrun's processes of one run: the first locks
    if args.command not in LOCKED or not out or getattr(args, "dry_run", False) or rank != "0":
        yield
        return
    path = Path(out)
    lock = path.parent / f".{path.name}.lock"
    try:
        import fcntl

        handle = open(lock, "a") if path.parent.is_dir() else None  # noqa: SIM115 - closed below
    except (ImportError, OSError):  # not POSIX, or a folder this process cannot write
        handle = None
    if handle is None:
        yield
        return
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(
                f"--out {path} is in use by another {args.command} run (still "
                "running?): wait for it to end, or give another --out"
            ) from None
        except OSError:  # no locks on this file system: runs unlocked
            yield
            return
        try:
            yield
        finally:
            lock.unlink(missing_ok=True)  # the holder's: nothing is left beside the folder
            fcntl.flock(handle, fcntl.LOCK_UN)
