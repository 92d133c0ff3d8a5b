"""The on-disk cache of built ``longred_short_tiny`` rows.

Building a task's rows splits the corpus into sentences and samples passages: about 5 s for the
six tasks on a 2-core CPU, spent again by every process that loads the suite (each evaluation
unit of a reproduce, whatever its ``--limit``). The rows are stored once as JSONL under
``<cache root>/tiny_tasks/<task>[-<phrasing>]-<corpora>-n<n>-seed<seed>-<code>.jsonl``, written
atomically with a manifest (size and sha256) beside it. ``code`` is the source hash of the code
that builds them (:data:`BUILDER_CODE`: the task builders, the sentence splitter, the corpus
readers and their pinned sources), so rows of other code are built again; the corpora are
sha256-pinned by their fetch. A file that does not match its manifest or does not parse is
reported with a warning and built again. ``data verify`` checks these files.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from longred_bench.cache import atomic_write_text, read_jsonl_file, warn, write_file_manifest
from longred_bench.source_tree import source_hash

BUILDER_CODE = ("longred_bench/taskdata/", "longred_bench/data/")
"""The code that builds the rows (tasks, sentences, corpora): a store file is named by its
source hash."""
FOLDER = "tiny_tasks"
"""The store's folder under the cache root."""

Rows = list[dict[str, Any]]


def rows_path(
    root: Path, task: str, corpora: Sequence[str], n: int, seed: int, phrasing: str | None
) -> Path:
    """Where :func:`load_or_build` keeps these rows under the cache ``root``."""
    words = f"-{phrasing}" if phrasing else ""
    code = source_hash(BUILDER_CODE)[:12]
    name = f"{task}{words}-{'+'.join(corpora)}-n{n}-seed{seed}-{code}.jsonl"
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
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    atomic_write_text(path, text)
    write_file_manifest(path, {"kind": "tiny-task-rows"})
    return rows
