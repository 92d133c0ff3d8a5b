"""The bodies of ``longred-bench data fetch``, ``data list`` and ``data verify`` (the parser is
the command line's)."""

from __future__ import annotations

import argparse
import shlex
from dataclasses import replace
from pathlib import Path

from longred_bench.cache import fetch_lock
from longred_bench.data.fetch import CachedEntry, fetch, list_cached
from longred_bench.data.sources import get_source
from longred_bench.data.verify import Verified, verify, verify_results


def _human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def cache_above(folder: Path) -> Path | None:
    """The cache ``folder`` is one of the suite's folders of (:data:`~longred_bench.cache.
    CACHE_FOLDERS`: ``corpora/``, ``models/``, ``tokens/``, ``runs/`` ...), where that cache
    holds a fetched entry (with its manifest): ``data list`` read such a folder as an empty
    cache and ``data fetch`` nested a cache in it. None otherwise (a folder of the same name
    beside a plain download, ``~/models/smollm2-135m``, is no cache)."""
    from longred_bench.cache import CACHE_FOLDERS
    from longred_bench.data.corpora import entry_present  # an entry: a folder with a manifest
    from longred_bench.data.sources import SOURCES

    if folder.name not in CACHE_FOLDERS:
        return None
    held = any(entry_present(folder.parent / source.entry) for source in SOURCES.values())
    return folder.parent if held else None


def format_cached_table(entries: list[CachedEntry]) -> str:
    """A plain-text table of cache entries, each followed by its archives' sha256."""
    if not entries:
        return "nothing cached"
    header = ("SOURCE", "SIZE", "FILES", "PATH")
    rows = [(e.source, _human_size(e.size_bytes), str(e.file_count), str(e.path)) for e in entries]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(3)]
    lines = []
    for row, entry in zip([header, *rows], [None, *entries], strict=True):
        cells = [row[0].ljust(widths[0]), row[1].rjust(widths[1]), row[2].rjust(widths[2]), row[3]]
        lines.append("  ".join(cells))
        if entry is not None and entry.problem is not None:
            lines.append(f"    damaged: {entry.problem}")
        elif entry is not None:
            lines.extend(f"    sha256 {digest}  {name}" for name, digest in entry.archives)
    return "\n".join(lines)


def run_fetch(args: argparse.Namespace) -> int:
    """Fetch the sources; each is reported on stderr as it ends and, where standard output is
    not a terminal (a pipe, a file), as a tab-separated ``SOURCE STATUS PATH`` line there for
    scripts (at a terminal that line said again what stderr had just said). A source that fails
    does not stop the others: its line says ``failed``, and the command then ends with its
    error (it printed no line, and the sources after it were not tried)."""
    import sys

    from longred_bench.data.fetch import FetchFailed

    failed = None
    with fetch_lock(args.cache):  # a second fetch into this cache waits, then finds it
        try:
            records = fetch(args.sources, args.from_dir, cache=args.cache, force=args.force)
        except FetchFailed as exc:  # every other source was tried: their lines, then the error
            records, failed = exc.records, exc
    if not sys.stdout.isatty():
        for record in records:
            print(f"{record.source}\t{record.status}\t{record.path}", flush=True)
    if failed is not None:
        raise failed
    return 0


def _in_cache(text: str, cache: Path | None) -> str:
    """``text`` with each repair command it gives (``longred-bench data fetch ...``) aimed at
    ``cache`` where that is not the default one: the fix named the default cache."""
    if cache is None:
        return text
    return text.replace("longred-bench data fetch ",
                        f"longred-bench data fetch --cache {shlex.quote(str(cache))} ")  # fmt: skip


def run_list(args: argparse.Namespace) -> int:
    print(_in_cache(format_cached_table(list_cached(args.cache)), args.cache))
    return 0


def _not_compares(result: Verified) -> Verified:
    """A results folder no manifest records (an ``eval`` or ``drift --out``) said as such, not
    as a cache entry "made by an older version" (what ``unrecorded`` means for the cache)."""
    if result.status != "unrecorded":
        return result
    return replace(result, detail="results no compare wrote (an eval's or drift's --out?)",
                   fix="no manifest records their files, so there is nothing to check")  # fmt: skip


def run_verify(args: argparse.Namespace) -> int:
    """Print one line per entry; exit status 1 if any is bad (corrupt, partial, missing, or not
    fetched though named in ``--sources``) or a ``--results`` folder holds no results."""
    for name in args.sources or []:
        get_source(name)  # an unknown name fails before anything is printed
    results = verify(args.sources, cache=args.cache) if not args.results or args.sources else []
    empty = 0
    for folder in args.results or []:
        found = [_not_compares(v) for v in verify_results(folder)]
        if not found:  # a mistyped folder, or one no compare wrote: not a pass
            empty += 1
            print(f"no cached results under {folder}: pass the folder `compare --out` wrote")
        elif all(v.status == "unrecorded" for v in found):  # an eval's or drift's --out
            empty += 1
        results += found
    for result in results:
        print(_in_cache(result.line(), args.cache), flush=True)
    bad = sum(result.bad for result in results)
    noun = "entry" if len(results) == 1 else "entries"
    unfetched = sum(result.status == "not fetched" for result in results)
    more = f", {unfetched} not fetched" if unfetched else ""
    empty_text = f", {empty} folder(s) without results" if empty else ""
    print(f"{len(results)} {noun} checked, {bad} bad{more}{empty_text}")
    return 1 if bad or empty else 0
