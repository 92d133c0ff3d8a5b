"""The lock on an ``--out`` (:mod:`longred_bench.cli.out_lock`) where the lock file is removed
under it, or the file system takes no locks: a lock taken on a file the run before had just
removed guards nothing, so it is taken again on the file there now (a second run into the folder
is still refused); a file system without locks runs the command unlocked, not refused."""

from __future__ import annotations

import argparse
import errno
import fcntl
from pathlib import Path

import pytest

from longred_bench.cli.out_lock import out_lock
from longred_bench.errors import UserError


def _args(out: Path) -> argparse.Namespace:
    return argparse.Namespace(command="eval", out=str(out), dry_run=False)


def test_a_lock_file_removed_as_it_is_taken_is_taken_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run before this one removed its lock file between this run's open and its lock:
    the lock held that removed file, and a third run made a new file and wrote into the same
    folder beside this one."""
    out = tmp_path / "o"
    lock = tmp_path / ".o.lock"
    real, calls = fcntl.flock, []

    def flock(fd, op):
        calls.append(fd)
        if len(calls) == 1:
            lock.unlink()  # the run before ends now, removing its lock file
        return real(fd, op)

    monkeypatch.setattr(fcntl, "flock", flock)
    with out_lock(_args(out)):
        assert len(calls) == 2  # taken again, on the file there now
        monkeypatch.setattr(fcntl, "flock", real)
        with pytest.raises(UserError, match="is in use by another run"), out_lock(_args(out)):
            pass
    assert not lock.exists()


def test_a_file_system_without_locks_runs_the_command_unlocked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", refuse)
    ran = False
    with out_lock(_args(tmp_path / "o")):
        ran = True
    assert ran
