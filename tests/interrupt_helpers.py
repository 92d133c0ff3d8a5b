"""What the Ctrl-C tests share: a wrapped function that raises ``KeyboardInterrupt`` after a
chosen call, Ctrl-C after a chosen model response, records without provenance, and the files a
command may leave in its ``--out``, and a request cache holding some responses."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest


class Interrupt:
    """Counts calls of a wrapped function and raises ``KeyboardInterrupt`` after call ``at``."""

    def __init__(self, real, at: int | None) -> None:
        self.real, self.at, self.calls = real, at, 0

    def __call__(self, *args, **kwargs):
        out = self.real(*args, **kwargs)
        self.calls += 1
        if self.at is not None and self.calls == self.at:
            raise KeyboardInterrupt
        return out


def patch_responses(monkeypatch: pytest.MonkeyPatch, at: int | None) -> Interrupt:
    """Ctrl-C right after the model's response number ``at`` was saved (None: never)."""
    from lm_eval.api.model import CacheHook

    hook = Interrupt(CacheHook.add_partial, at)
    monkeypatch.setattr(CacheHook, "add_partial", lambda self, *a: hook(self, *a))
    return hook


def write_responses(db: Path, n: int) -> None:
    """A request cache as lm-eval writes it (its ``unnamed`` table) holding ``n`` responses."""
    db.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(db)
    con.execute('CREATE TABLE "unnamed" (key TEXT PRIMARY KEY, value BLOB)')
    con.executemany('INSERT INTO "unnamed" VALUES (?, ?)', [(str(i), b"x") for i in range(n)])
    con.commit()
    con.close()


def bare_records(path: Path) -> list[dict]:
    """The JSONL records at ``path`` less their provenance (which names the call)."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [{k: v for k, v in r.items() if k != "provenance"} for r in rows]


def written_as_declared(out: Path, command: str) -> None:
    """What the command left in ``out`` is what ``--out`` is checked for (cli.outputs)."""
    from longred_bench.cli.outputs import WRITES

    declared = {name.rstrip("/") for name in WRITES[command]}
    assert {p.name for p in out.iterdir()} <= declared
