"""``longred-bench data verify``: check every cache entry against its recorded sizes and sha256.

Entries are the fetched sources (corpora, benchmark data, SmolLM2), the models built into the
cache (``tiny-base``, the Hugging Face copies made for vLLM), the RULER and NIAH-grid sample
files, the built tiny-task rows and the cached run results under ``runs/`` (and, with
:func:`verify_results`, those of a ``compare --out`` folder). Each is checked in full (every
file hashed) by :func:`longred_bench.cache.check_entry`; nothing is changed.

A source that was never fetched (no entry and no temporary of one) is ``not fetched``: a failure
only when it was asked for by name, since a job fetches just the sources it needs. A missing entry
with temporaries beside it is ``partial`` (a fetch interrupted, or still running) and fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from longred_bench.cache import EntryCheck, cache_dir, check_entry, check_file_entry
from longred_bench.data.corpora import fix_hint
from longred_bench.data.sources import SOURCES, get_source

# Folders of single-file sample caches (one JSONL per entry, manifest beside it).
SAMPLE_DIRS = ("ruler", "niah_grid", "tiny_tasks")
# Folders of model directories built into the cache (``<name>/`` or ``<name>/final/``).
MODEL_DIRS = ("models", "hf-models")
RESULT_FILES = ("eval.jsonl", "drift.jsonl")

Status = Literal["ok", "corrupt", "missing", "unrecorded", "partial", "not fetched"]


@dataclass(frozen=True)
class Verified:
    """One checked entry: its name (source or path under the cache), where it is, what was found
    (``status`` and ``detail``) and what to do about it. ``optional``: a source nobody named,
    for which ``not fetched`` is no failure."""

    name: str
    path: Path
    status: Status
    detail: str
    fix: str
    optional: bool = False

    @classmethod
    def of(cls, name: str, path: Path, check: EntryCheck, fix: str) -> Verified:
        """The result of :func:`longred_bench.cache.check_entry` (or ``check_file_entry``)."""
        return cls(name, path, check.status, check.detail, fix)

    @property
    def bad(self) -> bool:
        """Corrupt, partial, missing, or not fetched though named: ``data verify`` exits 1."""
        if self.status == "not fetched":
            return not self.optional
        return self.status in ("corrupt", "missing", "partial")

    def line(self) -> str:
        """One line for the terminal: status, name, and for anything but ``ok`` what is wrong."""
        head = f"{self.status:<11} {self.name}"
        if self.status == "ok":
            return head
        if self.status in ("missing", "not fetched"):
            return f"{head}: {self.fix}"
        return f"{head}: {self.detail}; {self.fix}"


def _temporaries(entry: Path, root: Path) -> list[str]:
    """The temporaries of ``entry`` beside it (``.<name>.tmp-*``, see
    :func:`longred_bench.cache.atomic_dir`), relative to ``root``: what a fetch leaves behind
    while it runs or if it is killed."""
    if not entry.parent.is_dir():
        return []
    found = entry.parent.glob(f".{entry.name}.tmp-*")
    return sorted(path.relative_to(root).as_posix() for path in found)


def _verify_source(name: str, root: Path, *, named: bool) -> Verified:
    entry = root / get_source(name).entry
    check = check_entry(entry, hashes=True)
    fetch_command = f"run `longred-bench data fetch --sources {name}`"
    if check.status == "missing":
        leftovers = _temporaries(entry, root)
        if not leftovers:
            return Verified(name, entry, "not fetched", "", fetch_command, optional=not named)
        more = f" (and {len(leftovers) - 1} more)" if len(leftovers) > 1 else ""
        detail = f"no entry, only {leftovers[0]}{more} of a fetch interrupted or still running"
        return Verified(name, entry, "partial", detail, fetch_command)
    if check.status == "unrecorded":
        fix = f"re-fetch with `longred-bench data fetch --sources {name} --force`"
    else:
        fix = fix_hint(name)
    return Verified.of(name, entry, check, fix)


def _model_dirs(root: Path) -> Iterator[Path]:
    """Model directories built into the cache (fetched sources excluded)."""
    fetched = {root / source.entry for source in SOURCES.values()}
    for folder in MODEL_DIRS:
        base = root / folder
        if not base.is_dir():
            continue
        for child in sorted(base.iterdir()):
            model = child / "final" if (child / "final").is_dir() else child
            if model not in fetched and (model / "config.json").is_file():
                yield model


def _settled(path: Path, root: Path) -> bool:
    """Not inside a temporary being built (or a replaced copy being deleted)."""
    return not any(".tmp-" in part for part in path.relative_to(root).parts)


def _result_dirs(base: Path, root: Path) -> Iterator[Path]:
    """Directories under ``base`` (inside ``root``) holding a cached result file."""
    if base.is_dir():
        found = {path.parent for name in RESULT_FILES for path in base.rglob(name)}
        yield from sorted(path for path in found if _settled(path, root))


def _sample_files(root: Path) -> Iterator[Path]:
    for folder in SAMPLE_DIRS:
        if (root / folder).is_dir():
            files = (root / folder).rglob("*.jsonl")
            yield from sorted(path for path in files if _settled(path, root))


def _derived(root: Path) -> Iterator[tuple[Path, bool]]:
    """Trained tokenizers (directories) and tokenised corpora (single files)."""
    if (root / "tokenizers").is_dir():
        for path in sorted((root / "tokenizers").iterdir()):
            if path.is_dir() and _settled(path, root):
                yield path, False
    if (root / "tokens").is_dir():
        for path in sorted((root / "tokens").rglob("*.pt")):
            if _settled(path, root):
                yield path, True


def _verify_built(path: Path, root: Path, single_file: bool) -> Verified:
    """A cache entry that is rebuilt (not fetched): the fix is to delete it and run again."""
    if single_file:
        check = check_file_entry(path, hashes=True)
    else:
        check = check_entry(path, hashes=True, required=False)
    fix = f"delete {path} and run again to rebuild it"
    return Verified.of(path.relative_to(root).as_posix(), path, check, fix)


def verify_results(folder: Path) -> list[Verified]:
    """Check the cached run results under ``folder`` (a ``compare --out`` folder, or its
    ``runs/``): every directory holding an ``eval.jsonl`` or ``drift.jsonl``."""
    if not folder.is_dir():
        what = "is a file" if folder.exists() else "does not exist"
        return [Verified(str(folder), folder, "missing", "",
                         f"{folder} {what}: pass the folder `compare --out` wrote")]  # fmt: skip
    out = []
    for path in _result_dirs(folder, folder):
        check = check_entry(path, hashes=True, required=False)
        fix = f"delete {path} and run compare again to recompute it"
        if check.status == "unrecorded":  # an `eval --out`, say: no manifest to check it by
            fix = "no manifest records its files (compare's units have one); nothing to check"
        out.append(Verified.of(path.as_posix(), path, check, fix))
    return out


def verify(sources: list[str] | None = None, *, cache: Path | None = None) -> list[Verified]:
    """Check ``sources`` (default: all of them and every other entry in the cache); a source
    not fetched is a failure only if named in ``sources``."""
    root = cache if cache is not None else cache_dir()
    names = list(dict.fromkeys(sources)) if sources is not None else list(SOURCES)
    results = [_verify_source(name, root, named=sources is not None) for name in names]
    if sources is None:
        results += [_verify_built(path, root, False) for path in _model_dirs(root)]
        results += [_verify_built(path, root, True) for path in _sample_files(root)]
        results += [_verify_built(path, root, False) for path in _result_dirs(root / "runs", root)]
        results += [_verify_built(path, root, single) for path, single in _derived(root)]
    return results
