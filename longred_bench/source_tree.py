"""The source that runs: a content hash of the package's files, and whether they are a commit's.

The package is four folders of the repository (``package-dir`` in ``pyproject.toml``):
``longred_bench/``, and ``training/``, ``kernels/``, ``tasks/``, installed as
``longred_bench.training`` and so on. Its *source files* are the ``.py`` and YAML files in them
(lm-eval's ``_yaml`` templates included; ``__pycache__`` and hidden names left out), found where
the modules are imported from (a checkout, a copy of one, an installed package) and named by
their path in the repository (``training/loop.py``).

A *source hash* is the sha256 of the sorted names of a set of source files, each with its git
blob id (the sha1 of ``blob SIZE\\0`` and the bytes, as ``git hash-object`` prints it): a
function of names and bytes alone, computed without git, and computed the same from a commit's
tree (``git ls-tree``) without checking it out. :func:`source_hash` hashes the files that run,
all of them or those under some folders (a unit's cache key holds the hash of the code it
depends on: :data:`longred_bench.jobs.units.UNIT_CODE`).

:func:`source_state` says what ran: the commit (``$LONGRED_SOURCE_COMMIT`` where set, as on a
machine that received a copy of the tree; else the checkout's ``HEAD``), the hash of all source
files, and whether they differ from that commit's (*dirty*). The commit's files are read from
git where the checkout has it; a copy without it compares with ``$LONGRED_SOURCE_HASH``, the
commit's hash computed where git has it (``python -m longred_bench.source_tree`` prints both
variables); with neither, dirty is unknown (None), never assumed clean. Computed once per
process, as the modules were imported.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import metadata
from pathlib import Path
from types import MappingProxyType

SOURCE_DIRS = {"longred_bench": "longred_bench", "training": "longred_bench.training",
               "kernels": "longred_bench.kernels", "tasks": "longred_bench.tasks"}  # fmt: skip
"""Folder of the repository -> the package it is imported as."""
COMMIT_VAR = "LONGRED_SOURCE_COMMIT"
"""Names the commit a copied source tree came from (its ``.git`` may be missing or stale)."""
HASH_VAR = "LONGRED_SOURCE_HASH"
"""The source hash of ``$LONGRED_SOURCE_COMMIT``, for a copy that cannot read the commit."""
DIRTY = "+dirty"
UNKNOWN = " (dirty unknown)"
"""Suffixes of :attr:`SourceState.label`: the files differ from the commit's / cannot be
compared with them."""


def is_source_path(name: str) -> bool:
    """Whether repository path ``name`` is a source file (see the module docstring)."""
    parts = name.split("/")
    hidden = any(p.startswith(".") or p == "__pycache__" for p in parts)
    return not hidden and parts[-1].endswith((".py", ".yaml", ".yml", "_yaml"))


def blob_id(data: bytes) -> str:
    """Git's blob id of a file holding ``data`` (what ``git hash-object`` prints)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def tree_hash(blobs: Mapping[str, str], prefixes: Iterable[str] | None = None) -> str:
    """Source hash of ``blobs`` (repository path -> blob id), of all of them or of those whose
    path starts with one of ``prefixes`` (a folder ``training/``, a file
    ``longred_bench/jobs/train.py``)."""
    want = None if prefixes is None else tuple(prefixes)
    digest = hashlib.sha256()
    for name in sorted(blobs):
        if want is None or name.startswith(want):
            digest.update(f"{name}\0{blobs[name]}\n".encode())
    return digest.hexdigest()


def imported_dirs() -> dict[str, Path]:
    """Where each folder of :data:`SOURCE_DIRS` is imported from."""
    dirs = {}
    for folder, package in SOURCE_DIRS.items():
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise ImportError(f"package {package} not found")
        dirs[folder] = Path(next(iter(spec.submodule_search_locations))).resolve()
    return dirs


def mixed_sources(dirs: Mapping[str, Path]) -> str | None:
    """Where the folders ``dirs`` (:func:`imported_dirs`) come from when that is neither one
    checkout (each folder at the top of one tree) nor one installed package (the others inside
    ``longred_bench/``): ``longred_bench`` taken from one checkout through ``PYTHONPATH`` while
    an editable install of another gives ``training``, ``kernels`` and ``tasks``. None where
    they are one tree."""
    base = dirs["longred_bench"]
    layouts = (
        {f: base.parent / f for f in dirs},
        {f: base / f for f in dirs} | {"longred_bench": base},
    )
    if dict(dirs) in layouts:
        return None
    return "; ".join(f"{folder}/ from {path}" for folder, path in dirs.items())


def scan(dirs: Mapping[str, Path]) -> dict[str, str]:
    """Repository path -> blob id of every source file under ``dirs`` (folder -> where it lies).
    A folder lying inside another (an installed package's ``longred_bench/training``) counts
    once, under its own name."""
    roots = set(dirs.values())
    blobs = {}
    for folder, root in dirs.items():
        for here, subdirs, files in os.walk(root):
            subdirs[:] = [d for d in subdirs if Path(here, d) not in roots]
            rel = Path(here).relative_to(root).as_posix()
            prefix = folder if rel == "." else f"{folder}/{rel}"
            for name in files:
                if is_source_path(f"{prefix}/{name}"):
                    blobs[f"{prefix}/{name}"] = blob_id(Path(here, name).read_bytes())
    return blobs


@lru_cache(maxsize=1)
def source_blobs() -> Mapping[str, str]:
    """Repository path -> blob id of the source files that run (read once per process)."""
    return MappingProxyType(scan(imported_dirs()))


@cache
def source_hash(prefixes: tuple[str, ...] | None = None) -> str:
    """Source hash of the files that run: all of them, or those under ``prefixes``."""
    return tree_hash(source_blobs(), prefixes)


def _git(repo: Path, *args: str) -> str | None:
    """Git's output in ``repo``, or None where git is missing or fails (its messages kept off
    the terminal)."""
    try:
        return subprocess.run(
            ["git", *args], cwd=repo, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def checkout_root(dirs: Mapping[str, Path]) -> Path | None:
    """The git checkout the folders ``dirs`` are, as its own top-level folders; None for an
    installed package, a copy without ``.git``, or folders inside some other repository (a
    virtualenv in one)."""
    root = dirs["longred_bench"].parent
    if any(path != root / folder for folder, path in dirs.items()):
        return None
    top = _git(root, "rev-parse", "--show-toplevel")
    return root if top and Path(top).resolve() == root else None


def commit_blobs(repo: Path, commit: str) -> dict[str, str] | None:
    """Repository path -> blob id of the source files at ``commit`` in ``repo``, or None where
    git cannot read that commit there."""
    if commit.startswith("-"):
        return None
    out = _git(repo, "ls-tree", "-r", "-z", "--full-tree", commit, "--", *SOURCE_DIRS)
    if out is None:
        return None
    blobs = {}
    for entry in out.split("\0"):
        meta, _, name = entry.partition("\t")
        if meta.split()[1:2] == ["blob"] and is_source_path(name):
            blobs[name] = meta.split()[2]
    return blobs


def _installed() -> str:
    try:
        return f"no git checkout (longred-bench {metadata.version('longred-bench')})"
    except metadata.PackageNotFoundError:
        return "no git checkout (longred-bench not installed)"


@dataclass(frozen=True)
class SourceState:
    """What ran: ``commit`` (None: none is known), the source hash of all its files and whether
    they differ from the commit's (``dirty``; None: unknown)."""

    commit: str | None
    source_hash: str
    dirty: bool | None

    @property
    def label(self) -> str:
        """The commit as records name it: ``COMMIT``, ``COMMIT+dirty``, ``COMMIT (dirty
        unknown)``, or ``no git checkout (longred-bench VERSION)``."""
        if self.commit is None:
            return _installed()
        return self.commit + {False: "", True: DIRTY, None: UNKNOWN}[self.dirty]

    @property
    def dirty_flag(self) -> bool | str:
        """``dirty`` as records hold it: true, false or ``"unknown"``."""
        return "unknown" if self.dirty is None else self.dirty


def state_of(
    blobs: Mapping[str, str], repo: Path | None, environ: Mapping[str, str]
) -> SourceState:
    """The state of source files ``blobs`` run from checkout ``repo`` (None: not a checkout)
    with environment ``environ`` (see the module docstring)."""
    own = tree_hash(blobs)
    named = environ.get(COMMIT_VAR, "").strip()
    commit = named or (repo and _git(repo, "rev-parse", "HEAD")) or None
    if commit is None:
        return SourceState(None, own, None)
    theirs = commit_blobs(repo, commit) if repo else None
    expected = tree_hash(theirs) if theirs is not None else None
    if expected is None and named:
        expected = environ.get(HASH_VAR, "").strip().lower() or None
    return SourceState(commit, own, None if expected is None else own != expected)


@lru_cache(maxsize=1)
def source_state() -> SourceState:
    """What runs in this process (computed once)."""
    return state_of(source_blobs(), checkout_root(imported_dirs()), os.environ)


def main(argv: list[str] | None = None) -> int:
    """``python -m longred_bench.source_tree [COMMIT]``: the two variables that name ``COMMIT``
    (default ``HEAD``) of this checkout for a copy of its tree, as ``NAME=VALUE`` words for
    ``env``; ``--state``: what this process runs (commit, source hash, dirty)."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--state"]:
        state = source_state()
        print(f"commit {state.label}; source {state.source_hash}; dirty: {state.dirty_flag}")
        return 0
    if len(args) > 1 or (args and args[0].startswith("-")):
        print(main.__doc__, file=sys.stderr)
        return 2
    repo = checkout_root(imported_dirs())
    full = repo and _git(repo, "rev-parse", "--verify", f"{args[0] if args else 'HEAD'}^{{commit}}")
    blobs = commit_blobs(repo, full) if repo and full else None
    if blobs is None:
        print("error: not a git checkout, or no such commit in it", file=sys.stderr)
        return 1
    print(f"{COMMIT_VAR}={full} {HASH_VAR}={tree_hash(blobs)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
