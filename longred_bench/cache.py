"""Where longred-bench keeps downloaded and decoded data, and how entries are written there.

The cache root is ``$LONGRED_CACHE`` when that variable is set to a non-empty value, and
``~/.cache/longred-bench`` otherwise. Every entry is built in a hidden temporary sibling and
renamed into place only once it is complete, so a half-written entry never counts as present:
an interrupted build leaves at most a ``.<name>.tmp-<pid>-<host>-<random>`` directory behind,
which :func:`remove_stale_temps` deletes once the process that made it (on this host: the cache
may be shared between machines) is gone.

Integrity: every entry carries a manifest (``manifest.json`` in a directory entry, or
``<file>.manifest.json`` beside a single-file entry) whose ``files`` list records the ``path``,
``size`` and ``sha256`` of each file, written when the entry is created
(:func:`write_manifest`, :func:`write_file_manifest`). :func:`check_entry` compares an entry
against those records: sizes always (cheap), hashes when asked or when the entry is small enough
to hash on every read (:data:`HASH_ON_READ_MAX_BYTES`). Manifests of older versions without
``sha256`` still get their sizes checked and are reported as ``unrecorded``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import socket
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, TypeVar

from longred_bench.errors import UserError

ENV_VAR = "LONGRED_CACHE"
MANIFEST_FILE = "manifest.json"
FILE_MANIFEST_SUFFIX = ".manifest.json"
# Entries up to this many bytes are hashed on every read; larger ones only by `data verify`.
HASH_ON_READ_MAX_BYTES = 64 << 20
_TMP_MARK = ".tmp-"
_REPLACE_ATTEMPTS = 5
_OLD_SUFFIX = "-old"


CACHE_FOLDERS = (".fetch.lock", "benchmarks", "corpora", "hf-models", "hub_corpora", "models",
                 "niah_grid", "ruler", "runs", "tiny_tasks", "tokenizers", "tokens")  # fmt: skip
"""The folders the suite keeps in its cache (``$LONGRED_CACHE``): data, models, the run cache."""


def cache_dir() -> Path:
    """Return the cache root: ``$LONGRED_CACHE`` if set and non-empty (a relative path is taken
    from the working directory, and returned absolute), else the user default; a one-line error
    when it is a file."""
    if ENV_VAR in os.environ and os.environ[ENV_VAR].strip():
        root = Path(os.environ[ENV_VAR]).expanduser().absolute()
        check_cache_root(root, f"{ENV_VAR}={root}", "set it to a folder (the cache root)")
        return root
    return Path.home() / ".cache" / "longred-bench"


def check_cache_root(root: Path, named: str, fix: str) -> None:
    """A one-line error (``named``: how the user gave ``root``; ``fix``: what to do) where
    ``root`` is a file or lies under one, so no folder can be made there."""
    if root.is_file():
        raise UserError(f"{named} is a file: {fix}")
    above = nearest_existing(root)
    if not above.is_dir():
        raise UserError(f"{named}: {above} is a file, so no folder can be made under it: {fix}")


def nearest_existing(path: Path) -> Path:
    """``path`` or its closest ancestor that exists (``.`` for a relative path with none)."""
    for candidate in (path, *path.parents):
        if os.path.lexists(candidate):
            return candidate
    return Path(".")


@contextlib.contextmanager
def build_lock(
    entry: Path, waiting: str | None = None, *, busy: str | None = None
) -> Iterator[None]:
    """Hold an exclusive lock on ``entry`` (a file ``.<name>.lock`` beside it) for the block:
    processes building the same entry (``--jobs`` workers, array jobs on one node) build it
    one at a time, each checking inside the block whether it is already there; ``waiting`` is
    printed when another process holds the lock. With ``busy``, a process that finds the lock
    held does not wait: it raises :class:`UserError` with that message. Where ``fcntl`` is
    missing (Windows), the file system refuses locks (some shared mounts) or the lock file
    cannot be made (a read-only cache) the block runs unlocked."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        handle = open(entry.parent / f".{entry.name}.lock", "a")  # noqa: SIM115 - closed below
    except OSError:  # a folder this process cannot write (a read-only copy): runs unlocked
        yield
        return
    with handle:
        locked = True
        try:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if busy is not None:
                    raise UserError(busy) from None
                if waiting:
                    print(waiting, flush=True)
                fcntl.flock(handle, fcntl.LOCK_EX)
        except OSError:  # no locks on this file system: build as before, unlocked
            locked = False
        try:
            yield
        finally:
            if locked:
                fcntl.flock(handle, fcntl.LOCK_UN)


FETCH_WAITING = "[data] another process is fetching into this cache: waiting for it"


def fetch_lock(root: Path | None = None) -> contextlib.AbstractContextManager[None]:
    """The lock ``data fetch`` and a table's own fetch of missing sources hold on the cache
    ``root`` (default :func:`cache_dir`): array jobs or calls started together download each
    source once, the later ones waiting (and saying so) and then finding it cached."""
    return build_lock((root if root is not None else cache_dir()) / "fetch", FETCH_WAITING)


def _temp_prefix(final: Path) -> str:
    return f".{final.name}{_TMP_MARK}"


def _owned_prefix(final: Path) -> str:
    return f"{_temp_prefix(final)}{os.getpid()}-{socket.gethostname()}-"


@contextlib.contextmanager
def atomic_dir(final: Path, *, replace: bool = False) -> Iterator[Path]:
    """Yield an empty temporary directory that becomes ``final`` when the block succeeds.

    The directory is created next to ``final`` (same file system, so the rename is atomic). On
    an exception it is removed and the exception propagates; ``final`` is never touched. If
    ``final`` exists (another process finished the same entry first), the new copy is discarded
    and the existing one kept, unless ``replace``: then the existing one is moved aside, the new
    one renamed into place, and only then is the old one deleted (see :func:`_swap_in`).
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=_owned_prefix(final), dir=final.parent))
    tmp.chmod(0o755)
    try:
        yield tmp
        _readable(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _install(tmp, final, replace=replace)


def _readable(folder: Path) -> None:
    """Let group and others read each file under ``folder`` as they read it (0755): safetensors
    writes 0600, so a model saved in a shared run cache was its owner's alone."""
    for path in (p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        if (mode := path.stat().st_mode) & 0o044 != 0o044:
            path.chmod(mode | 0o044)


def _install(tmp: Path, final: Path, *, replace: bool) -> None:
    """Rename the finished ``tmp`` to ``final``; see :func:`atomic_dir` for an existing one."""
    for _ in range(_REPLACE_ATTEMPTS):
        try:
            os.rename(tmp, final)
            return
        except OSError:
            if not final.exists():
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        if not replace:
            shutil.rmtree(tmp, ignore_errors=True)
            return
        if _swap_in(tmp, final):
            return
    shutil.rmtree(tmp, ignore_errors=True)
    raise OSError(f"could not replace {final}: other processes kept replacing it")


def _swap_in(tmp: Path, final: Path) -> bool:
    """Move ``final`` aside, rename ``tmp`` into its place, then delete the old copy.

    Returns False (nothing changed) if ``final`` vanished before it could be moved: the caller
    tries again. If another process installs its own copy between the two renames, that copy is
    kept and ours discarded. The old copy has a temporary's name, so a crash leaves nothing that
    counts as an entry and :func:`remove_stale_temps` clears it later.
    """
    old = final.parent / f"{_owned_prefix(final)}{secrets.token_hex(4)}{_OLD_SUFFIX}"
    try:
        os.rename(final, old)
    except FileNotFoundError:
        return False
    try:
        os.rename(tmp, final)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if not final.exists():
            os.rename(old, final)
            raise
    shutil.rmtree(old, ignore_errors=True)
    return True


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
    """Delete temporaries left next to ``final`` by dead processes of this host; return them.

    An old copy moved aside by :func:`_swap_in` of a process killed before its replacement was
    in place is renamed back to ``final`` instead (if ``final`` is still absent).
    """
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
        if candidate.name.endswith(_OLD_SUFFIX) and not final.exists():
            os.rename(candidate, final)
        elif candidate.is_dir() and not candidate.is_symlink():
            shutil.rmtree(candidate, ignore_errors=True)
        else:
            candidate.unlink(missing_ok=True)
        removed.append(candidate)
    return removed


# --- integrity records --------------------------------------------------------------------


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_records(root: Path, names: list[str] | None = None) -> list[dict[str, Any]]:
    """``{"path", "size", "sha256"}`` of ``names`` under ``root`` (default: every file there
    except manifests and temporaries), sorted by path."""
    if names is None:
        names = [path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file()]
        names = [name for name in names if name != MANIFEST_FILE]
    return [
        {"path": name, "size": (root / name).stat().st_size, "sha256": sha256_file(root / name)}
        for name in sorted(names)
    ]


def _manifest_text(fields: Mapping[str, Any], records: list[dict[str, Any]]) -> str:
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    manifest = {**fields, "files": records, "created": fields.get("created", created)}
    return json.dumps(manifest, indent=2) + "\n"


def write_manifest(entry: Path, fields: Mapping[str, Any] | None = None) -> Path:
    """Write ``entry/manifest.json``: ``fields`` plus the file records of everything in ``entry``
    and a ``created`` time (UTC). Call it last, once the entry's files are complete."""
    path = entry / MANIFEST_FILE
    atomic_write_text(path, _manifest_text(fields or {}, file_records(entry)))
    return path


def file_manifest_path(path: Path) -> Path:
    """The manifest beside the single-file entry ``path``."""
    return path.with_name(path.name + FILE_MANIFEST_SUFFIX)


def write_file_manifest(path: Path, fields: Mapping[str, Any] | None = None) -> Path:
    """Write the manifest of the single-file entry ``path`` (after ``path`` itself)."""
    records = file_records(path.parent, [path.name])
    manifest = file_manifest_path(path)
    atomic_write_text(manifest, _manifest_text(fields or {}, records))
    return manifest


@dataclass(frozen=True)
class EntryCheck:
    """What :func:`check_entry` found.

    ``status``: ``ok``; ``corrupt`` (``file`` names the bad file, ``detail`` says how);
    ``missing`` (no entry at all); ``unrecorded`` (no sha256 records: made by an older version,
    sizes checked where recorded, ``detail`` says which).
    """

    status: Literal["ok", "corrupt", "missing", "unrecorded"]
    file: str = ""
    detail: str = ""

    @property
    def usable(self) -> bool:
        """Whether the entry may be read (it is intact as far as its records can tell)."""
        return self.status in ("ok", "unrecorded")


def _read_manifest(path: Path) -> dict[str, Any] | None:
    """The manifest at ``path``; None if it is not a readable JSON object."""
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) else None


def _check_record(root: Path, record: Mapping[str, Any], hashes: bool) -> EntryCheck | None:
    """The problem with one recorded file, or None if it matches its record."""
    name = str(record["path"])
    path = root / name
    if not path.is_file():
        return EntryCheck("corrupt", name, f"{name} is missing")
    size = path.stat().st_size
    if "size" in record and size != record["size"]:
        return EntryCheck("corrupt", name, f"{name} is {size} bytes, recorded {record['size']}")
    if hashes and "sha256" in record and sha256_file(path) != record["sha256"]:
        return EntryCheck("corrupt", name, f"{name} does not match its recorded sha256")
    return None


def check_records(
    root: Path, manifest_path: Path, *, hashes: bool | None = None, required: bool = True
) -> EntryCheck:
    """Check the files under ``root`` against the manifest at ``manifest_path``.

    ``hashes``: True hashes every file, False none, None only if the recorded total is at most
    :data:`HASH_ON_READ_MAX_BYTES`. A missing manifest, or one without file records, is
    ``corrupt`` if ``required`` (a fetched source: every fetch records its files), else
    ``unrecorded`` (an entry written before manifests existed).
    """
    if not manifest_path.is_file():
        if required:
            return EntryCheck("corrupt", manifest_path.name, f"{manifest_path.name} is missing")
        return EntryCheck("unrecorded", detail="no file records: no manifest")
    manifest = _read_manifest(manifest_path)
    if manifest is not None and "files" not in manifest:
        if required:
            detail = f"{manifest_path.name} records no files"
            return EntryCheck("corrupt", manifest_path.name, detail)
        return EntryCheck("unrecorded", detail="no file records in its manifest")
    records = manifest.get("files") if manifest is not None else None
    if not isinstance(records, list) or not all(
        isinstance(r, dict) and "path" in r for r in records
    ):
        return EntryCheck("corrupt", manifest_path.name, f"{manifest_path.name} is unreadable")
    if hashes is None:
        hashes = sum(int(r.get("size", 0)) for r in records) <= HASH_ON_READ_MAX_BYTES
    for record in records:
        problem = _check_record(root, record, hashes)
        if problem is not None:
            return problem
    if not records or not all("sha256" in r for r in records):
        return EntryCheck("unrecorded", detail="no file records with sha256 (sizes match)")
    return EntryCheck("ok")


def check_entry(entry: Path, *, hashes: bool | None = None, required: bool = True) -> EntryCheck:
    """Check the directory entry ``entry`` against its ``manifest.json``
    (see :func:`check_records`); ``missing`` if there is no such directory."""
    if not entry.is_dir():
        return EntryCheck("missing", detail=f"{entry} does not exist")
    return check_records(entry, entry / MANIFEST_FILE, hashes=hashes, required=required)


def check_file_entry(path: Path, *, hashes: bool | None = None) -> EntryCheck:
    """Check the single-file entry ``path`` against the manifest beside it (optional: older
    versions wrote none)."""
    if not path.is_file():
        return EntryCheck("missing", detail=f"{path} does not exist")
    return check_records(path.parent, file_manifest_path(path), hashes=hashes, required=False)


T = TypeVar("T")


def read_jsonl_file(
    path: Path, what: str, parse: Callable[[dict[str, Any]], T] | None = None
) -> list[T] | None:
    """The objects of the single-file JSONL entry ``path``, each through ``parse`` where given
    (a ``KeyError``, ``TypeError`` or ``ValueError`` there counts as not parsing). None where
    the file is missing, and, with a warning naming ``what`` and the file, where it does not
    match its manifest or does not parse: the caller makes it again."""
    check = check_file_entry(path)
    if check.status == "missing":
        return None
    if not check.usable:
        warn(f"{what} {path} is corrupt ({check.detail}); making it again")
        return None
    try:
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        objects = [json.loads(line) for line in lines]
        return [parse(o) for o in objects] if parse is not None else objects
    except (OSError, ValueError, KeyError, TypeError) as exc:
        warn(f"{what} {path} does not parse ({type(exc).__name__}); making it again")
        return None


def write_jsonl_file(path: Path, objects: list[dict[str, Any]], kind: str) -> None:
    """Store ``objects`` at ``path`` as JSONL, atomically, then its manifest (of ``kind``)
    beside it: the single-file entry :func:`read_jsonl_file` reads."""
    atomic_write_text(path, "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objects))
    write_file_manifest(path, {"kind": kind})


def warn(message: str) -> None:
    """Print a one-line warning about the cache to stderr."""
    print(f"warning: {message}", file=sys.stderr, flush=True)


_WARNED: set[tuple[str, tuple]] = set()


def warnings_given() -> set[tuple[str, tuple]]:
    """What :func:`warn_once` said in this process so far: a worker process the command starts
    takes them (:func:`take_warnings`), so it does not name again a damaged file the command
    named while listing its units."""
    return set(_WARNED)


def take_warnings(given: set[tuple[str, tuple]]) -> None:
    """Count ``given`` (:func:`warnings_given` of another process) as said in this one."""
    _WARNED.update(given)


def warn_once(message: str, about: Path) -> None:
    """:func:`warn`, once in this process while the files it is ``about`` (a file, or a
    folder's files) stay as they are: one damaged file that each listing, check and retry of a
    call reads is named once, not at every read."""
    files = sorted(about.iterdir()) if about.is_dir() else [about]
    stats = [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files if p.is_file()]
    key = (message, tuple(stats))
    if key not in _WARNED:
        _WARNED.add(key)
        warn(message)
