"""The lock :func:`longred_bench.cli.out_lock.out_lock` holds on an ``--out``, pinned: every
command that writes results locks its folder, a command without a folder runs unlocked, the lock
file is one another user's run can open, a lock file that cannot be made or removed lets the run
go on, and the run keeps no descriptor of it once it ends."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from longred_bench.cli.out_lock import out_lock
from longred_bench.errors import UserError


def _args(command: str, out: Path | None) -> argparse.Namespace:
    """The parsed arguments of a run (not a dry run) of ``command`` into ``out``."""
    return argparse.Namespace(command=command, out=None if out is None else str(out),
                              dry_run=False)  # fmt: skip


@pytest.mark.parametrize("command", ["eval", "compare", "drift", "psa", "train"])
def test_each_command_that_writes_results_refuses_a_busy_folder(tmp_path, command) -> None:
    """A second run of the same command into the folder stops in one line."""
    out = tmp_path / "o"
    busy = pytest.raises(UserError, match="is in use by another run")
    with out_lock(_args(command, out)), busy, out_lock(_args(command, out)):
        pass


def test_a_command_without_an_out_runs_unlocked() -> None:
    """No ``--out`` (``eval``'s, refused by the command itself): the block runs."""
    ran = False
    with out_lock(_args("eval", None)):
        ran = True
    assert ran


def test_the_lock_file_can_be_opened_by_another_user(tmp_path) -> None:
    """The lock file is readable by group and others (under a umask of 022), so another user's
    run into the folder finds it held rather than failing to open it and running unlocked."""
    old = os.umask(0o022)
    try:
        with out_lock(_args("eval", tmp_path / "o")):
            mode = (tmp_path / ".o.lock").stat().st_mode & 0o777
    finally:
        os.umask(old)
    assert mode == 0o644


def test_a_lock_file_that_cannot_be_made_leaves_the_run_unlocked(tmp_path) -> None:
    """Where the lock file cannot be opened (a folder in its place) the block runs unlocked."""
    (tmp_path / ".o.lock").mkdir()
    ran = False
    with out_lock(_args("eval", tmp_path / "o")):
        ran = True
    assert ran and (tmp_path / ".o.lock").is_dir()


def test_a_lock_file_that_cannot_be_removed_stays_without_an_error(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's end does not fail where its lock file may not be removed (another user's file
    in a folder that is not this user's)."""
    out = tmp_path / "o"

    def refuse(self, missing_ok=False):
        raise PermissionError(13, "Permission denied", str(self))

    with out_lock(_args("eval", out)):
        monkeypatch.setattr(Path, "unlink", refuse)
    monkeypatch.undo()
    assert (tmp_path / ".o.lock").is_file()
    with out_lock(_args("eval", out)):  # released all the same
        pass


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs Linux's /proc")
def test_the_run_keeps_no_descriptor_of_its_lock(tmp_path) -> None:
    """The lock's descriptor is closed when the block ends (a process running many commands,
    as the tests do, would run out of them)."""
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(3):
        with out_lock(_args("eval", tmp_path / "o")):
            pass
    assert len(os.listdir("/proc/self/fd")) == before
