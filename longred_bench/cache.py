"""Where longred-bench keeps downloaded and decoded data, and how entries are written there.

The cache root is ``$LONGRED_CACHE`` when that variable is set to a non-empty value, and
``~/.cache/longred-bench`` otherwise. Every entry is built in a hidden temporary sibling and
renamed into place only once it is complete, so a half-written entry never counts as present:
an interrupted build leaves at most a ``.<name>.tmp-<pid>-<host>-<random>`` directory behind,
which :func:`remove_stale_temps` deletes once the process that made it (on this host: the cache
may be shared between machines) is gone.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

ENV_VAR = "LONGRED_CACHE"
_TMP_MARK = ".tmp-"


def cache_dir() -> Path:
    """Return the cache root: ``$LONGRED_CACHE`` if set and non-empty, else the user default."""
    if ENV_VAR in os.environ and os.environ[ENV_VAR].strip():
        return Path(os.environ[ENV_VAR]).expanduser()
    return Path.home() / ".cache" / "longred-bench"


def _temp_prefix(final: Path) -> str:
    return f".{final.name}{_TMP_MARK}"


def _owned_prefix(final: Path) -> str:
    return f"{_temp_prefix(final)}{os.getpid()}-{socket.gethostname()}-"


@contextlib.contextmanager
def atomic_dir(final: Path) -> Iterator[Path]:
    """Yield an empty temporary directory that becomes ``final`` when the block succeeds.

    The directory is created next to ``final`` (same file system, so the rename is atomic). On
    an exception it is removed and the exception propagates; ``final`` is never touched. If
    ``final`` appeared meanwhile (another process finished the same entry first), the new copy
    is discarded and the existing one kept.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=_owned_prefix(final), dir=final.parent))
    tmp.chmod(0o755)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    try:
        os.rename(tmp, final)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if not final.is_dir():
            raise


@contextlib.contextmanager
def scratch_dir(near: Path) -> Iterator[Path]:
    """Yield a scratch directory next to ``near`` (same file system), always removed after.

    It is named like :func:`atomic_dir`'s temporaries, so :func:`remove_stale_temps` for
    ``near`` also clears scratch space left by a killed process.
    """
    near.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=_owned_prefix(near), suffix="-scratch", dir=near.parent))
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=_owned_prefix(path), dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o644)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)
        raise


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see either the old file or the whole new one."""
    _write_atomic(path, data)


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically; see :func:`atomic_write_bytes`."""
    _write_atomic(path, text.encode("utf-8"))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temps(final: Path) -> list[Path]:
    """Delete temporaries left next to ``final`` by dead processes of this host; return them."""
    removed: list[Path] = []
    if not final.parent.is_dir():
        return removed
    prefix = _temp_prefix(final)
    for candidate in final.parent.iterdir():
        if not candidate.name.startswith(prefix):
            continue
        pid_text, _, rest = candidate.name[len(prefix) :].partition("-")
        if not pid_text.isdigit() or not rest.startswith(f"{socket.gethostname()}-"):
            continue
        if _pid_alive(int(pid_text)):
            continue
        if candidate.is_dir() and not candidate.is_symlink():
            shutil.rmtree(candidate, ignore_errors=True)
        else:
            candidate.unlink(missing_ok=True)
        removed.append(candidate)
    return removed
