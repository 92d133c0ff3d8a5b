"""The on-disk cache of built ``longred_short_tiny`` rows.

Building a task's rows splits the corpus into sentences and samples passages: about 5 s for the
six tasks on a 2-core CPU, spent again by every process that loads the suite (each evaluation
unit of a reproduce, whatever its ``--limit``). The rows are stored once as JSONL under
``<cache root>/tiny_tasks/<task>[-<phrasing>]-<corpora>-n<n>-seed<seed>-<code>.jsonl``, written
atomically with a manifest (size and sha256) beside it. ``code`` is the source hash of the code
that generates task data, as for the RULER samples
(:func:`~longred_bench.taskdata.ruler.store.generator_hash`: the task builders, the sentence
splitter, the corpus readers and their pinned sources), so rows of other code are built again;
the corpora are sha256-pinned by their fetch. A file that does not match its manifest or does
not parse is reported with a warning and built again. ``data verify`` checks these files.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from longred_bench.cache import read_jsonl_file, warn, write_jsonl_file
from longred_bench.taskdata.ruler.store import generator_hash

FOLDER = "tiny_tasks"
"""The store's folder under the cache root."""

Rows = list[dict[str, Any]]


def rows_path(
    root: Path, task: str, corpora: Sequence[str], n: int, seed: int, phrasing: str | None
) -> Path:
    """Where :func:`load_or_build` keeps these rows under the cache ``root``."""
    words = f"-{phrasing}" if phrasing else ""
    name = f"{task}{words}-{'+'.join(corpora)}-n{n}-seed{seed}-{generator_hash()}.jsonl"
    return root / FOLDER / name


def read_rows(path: Path, n: int) -> Rows | None:
    """The ``n`` rows stored at ``path`` if it holds exactly that many and matches its
    manifest (:func:`~longred_bench.cache.read_jsonl_file`); None otherwise (with a warning
    naming the file where one exists)."""
    rows = read_jsonl_file(path, "tiny task cache")
    if rows is None:
        return None
    if len(rows) != n or not all(isinstance(row, dict) for row in rows):
        warn(f"tiny task cache {path} holds {len(rows)} lines, not {n} rows; making it again")
        return None
    return rows


def load_or_build(path: Path, n: int, build: Callable[[], Rows]) -> Rows:
    """The rows stored at ``path``, else ``build()``'s, stored there (JSONL, then its
    manifest)."""
    rows = read_rows(path, n)
    if rows is not None:
        return rows
    rows = build()
    write_jsonl_file(path, rows, "tiny-task-rows")
    return rows
