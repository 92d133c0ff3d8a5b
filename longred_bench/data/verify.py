"""``longred-bench data verify``: check every cache entry against its recorded sizes and sha256.

Entries are the fetched sources (corpora, benchmark data, SmolLM2), the models built into the
cache (``tiny-base``, the Hugging Face copies made for vLLM), the RULER and NIAH-grid sample
files and the cached run results under ``runs/`` (and, with :func:`verify_results`, those of a
``compare --out`` folder). Each is checked in full (every file hashed)
by :func:`longred_bench.cache.check_entry`; nothing is changed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from longred_bench.cache import EntryCheck, cache_dir, check_entry, check_file_entry
from longred_bench.data.corpora import fix_hint
from longred_bench.data.sources import SOURCES, get_source

# Folders of single-file sample caches (one JSONL per entry, manifest beside it).
SAMPLE_DIRS = ("ruler", "niah_grid")
# Folders of model directories built into the cache (``<name>/`` or ``<name>/final/``).
MODEL_DIRS = ("models", "hf-models")
RESULT_FILES = ("eval.jsonl", "drift.jsonl")


@dataclass(frozen=True)
class Verified:
    """One checked entry: its name (source or path under the cache), where it is, the result
    and what to do about a bad one."""

    name: str
    path: Path
    check: EntryCheck
    fix: str

    @property
    def bad(self) -> bool:
        """Corrupt or missing: ``data verify`` exits non-zero."""
        return self.check.status in ("corrupt", "missing")

    def line(self) -> str:
        """One line for the terminal: status, name, and for anything but ``ok`` what is wrong."""
        status = self.check.status
        if status == "ok":
            return f"ok          {self.name}"
        if status == "missing":
            return f"missing     {self.name}: {self.fix}"
        if status == "unrecorded":
            return f"unrecorded  {self.name}: {self.check.detail}; {self.fix}"
        return f"corrupt     {self.name}: {self.check.detail}; {self.fix}"


def _verify_source(name: str, root: Path) -> Verified:
    entry = root / get_source(name).entry
    check = check_entry(entry, hashes=True)
    if check.status == "missing":
        fix = f"run `longred-bench data fetch --sources {name}`"
    elif check.status == "unrecorded":
        fix = f"re-fetch with `longred-bench data fetch --sources {name} --force`"
    else:
        fix = fix_hint(name)
    return Verified(name, entry, check, fix)


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
    return Verified(path.relative_to(root).as_posix(), path, check, fix)


def verify_results(folder: Path) -> list[Verified]:
    """Check the cached run results under ``folder`` (a ``compare --out`` folder, or its
    ``runs/``): every directory holding an ``eval.jsonl`` or ``drift.jsonl``."""
    if not folder.is_dir():
        return [Verified(str(folder), folder, EntryCheck("missing"), "pass an existing folder")]
    out = []
    for path in _result_dirs(folder, folder):
        check = check_entry(path, hashes=True, required=False)
        fix = f"delete {path} and run compare again to recompute it"
        out.append(Verified(path.as_posix(), path, check, fix))
    return out


def verify(sources: list[str] | None = None, *, cache: Path | None = None) -> list[Verified]:
    """Check ``sources`` (default: all of them and every other entry in the cache)."""
    root = cache if cache is not None else cache_dir()
    names = list(dict.fromkeys(sources)) if sources is not None else list(SOURCES)
    results = [_verify_source(name, root) for name in names]
    if sources is None:
        results += [_verify_built(path, root, False) for path in _model_dirs(root)]
        results += [_verify_built(path, root, True) for path in _sample_files(root)]
        results += [_verify_built(path, root, False) for path in _result_dirs(root / "runs", root)]
        results += [_verify_built(path, root, single) for path, single in _derived(root)]
    return results
