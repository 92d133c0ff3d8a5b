"""What a request cache holds: the model responses an evaluation saved as it computed them
(lm-eval's SQLite files at a prefix) and the ``ppl`` suite's finished lengths (a folder of the
same name); counted and deleted by files alone (see :mod:`longred_bench.jobs.resume`, which
keys the prefixes)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

REQUESTS = "requests"
"""The folder of an output (or of a run-cache unit's work) that holds its request caches."""


def _rows(db: Path) -> int:
    """Rows of a request cache (0 if unreadable)."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return int(con.execute('SELECT COUNT(*) FROM "unnamed"').fetchone()[0])
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def saved_responses(prefix: Path) -> int:
    """Model responses kept at the request-cache ``prefix``, plus one per finished ``ppl``
    length (0 when none)."""
    dbs = prefix.parent.glob(f"{prefix.name}_rank*.db") if prefix.parent.is_dir() else ()
    lengths = prefix.glob("ppl-*.json") if prefix.is_dir() else ()
    return sum(_rows(db) for db in dbs) + len(list(lengths))


def drop_responses(prefix: Path) -> None:
    """Delete what the request cache at ``prefix`` holds (once its unit's results are saved)."""
    import shutil

    for db in prefix.parent.glob(f"{prefix.name}_rank*.db") if prefix.parent.is_dir() else ():
        db.unlink(missing_ok=True)
    shutil.rmtree(prefix, ignore_errors=True)


def saved_responses_under(folder: Path) -> int:
    """:func:`saved_responses` of every request cache under ``folder``."""
    if not folder.is_dir():
        return 0
    return sum(_rows(db) for db in folder.rglob("*.db")) + len(list(folder.rglob("ppl-*.json")))
