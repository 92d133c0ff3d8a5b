"""The request cache's SQLite files (``<prefix>_rank*.db``, lm-eval's ``use_cache``) checked
before lm-eval opens them: one that a kill, a full disk or a copy cut short left unreadable is
set aside beside itself (``<file>.damaged``, nothing deleted) with a warning naming both files,
and its responses are computed again; lm-eval would otherwise stop in a traceback
(``sqlite3.DatabaseError: database disk image is malformed``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from longred_bench.cache import warn

DAMAGED = ".damaged"
"""What a damaged request-cache file's name gets when it is set aside."""


def unreadable(db: Path) -> str | None:
    """Why the request-cache file ``db`` cannot be read (None where it can: an empty file too,
    which SQLite takes as an empty database)."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            found = con.execute("PRAGMA quick_check").fetchone()
            tables = {
                r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
            if "unnamed" in tables:  # sqlitedict's table: every row must read back
                con.execute('SELECT COUNT(*), SUM(LENGTH(value)) FROM "unnamed"').fetchone()
        finally:
            con.close()
    except sqlite3.Error as exc:
        return str(exc)
    if found and found[0] == "ok":
        return None
    return _first_problem(str(found[0]) if found else "no answer")


def _first_problem(report: str) -> str:
    """SQLite's integrity report (a header and one line per damaged cell, dozens of lines) as
    one line: its first problem, and how many more it lists."""
    problems = [p for line in report.splitlines() if (p := line.strip()) and "***" not in p]
    if len(problems) <= 1:
        return problems[0] if problems else report.strip() or "no answer"
    return f"{problems[0]}, and {len(problems) - 1} more problem(s)"


def set_aside_damaged(prefix: Path) -> list[Path]:
    """Set aside each damaged request-cache file at ``prefix`` (see the module); the files
    set aside, where they went."""
    if not prefix.parent.is_dir():
        return []
    moved = []
    for db in sorted(prefix.parent.glob(f"{prefix.name}_rank*.db")):
        why = unreadable(db)
        if why is None:
            continue
        aside = db.with_name(db.name + DAMAGED)
        n = 2
        while aside.exists():
            aside, n = db.with_name(f"{db.name}{DAMAGED}-{n}"), n + 1
        db.replace(aside)
        for extra in ("-journal", "-wal", "-shm"):  # SQLite's files beside it, if any
            side = db.with_name(db.name + extra)
            if side.exists():
                side.replace(aside.with_name(aside.name + extra))
        warn(f"saved model responses {db} are damaged ({why}): set aside as {aside.name}; "
             "the responses it held are computed again")  # fmt: skip
        moved.append(aside)
    return moved
