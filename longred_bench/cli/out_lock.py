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
from typing import Any

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
    path = Path(out).expanduser().resolve()  # `.`, `../o` and a symlink name one folder
    lock = path.parent / f".{path.name}.lock"
    try:
        import fcntl
    except ImportError:  # not POSIX
        yield
        return
    fd = _held(lock, fcntl, out) if path.parent.is_dir() else None
    if fd is None:
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(OSError):  # another user's file in a folder not ours: it stays
            lock.unlink(missing_ok=True)  # the holder's: nothing is left beside the folder
        os.close(fd)  # releases the lock


def _held(lock: Path, fcntl: Any, out: str) -> int | None:
    """An open descriptor of ``lock`` holding its exclusive lock; None where it cannot be made
    or the file system refuses locks. A lock file removed by the run that held it, just as this
    one opened it, is opened again (the lock on a removed file guards nothing)."""
    for _ in range(8):
        try:
            fd = os.open(lock, os.O_RDONLY | os.O_CREAT, 0o644)  # another user's file too
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise UserError(f"--out {out} is in use by another run (still running?): wait for "
                            "it to end, or give another --out") from None  # fmt: skip
        except OSError:  # no locks on this file system
            os.close(fd)
            return None
        try:
            if os.fstat(fd).st_ino == os.stat(lock).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)
    return None
