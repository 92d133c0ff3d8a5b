"""Hub corpus entries under concurrency: processes asking for the same ``hf:`` member at once
stream it once and all read the same complete entry, and a complete entry is never rebuilt.
The hub is mocked: ``hub_revision`` answers a fixed commit and ``_stream_texts`` counts its
calls (one line per call in a file, so calls in child processes count too) and sleeps."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import time
from pathlib import Path

import pytest

from longred_bench.cache import check_entry
from longred_bench.data import hub_corpora
from longred_bench.data.corpus_spec import Member, parse_source

SPEC = "hf:org/books:field=body:docs=3|austen+kjv"
TEXTS = ["book one", "book two", "book three"]
PROCESSES = 4


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """An empty cache, the hub at the commit in ``hub["commit"]`` and a stream that records each
    call in ``hub["calls"]`` and takes ``hub["seconds"]``."""
    state = {"commit": "abc123", "calls": tmp_path / "stream-calls", "seconds": 0.5}
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    for name in hub_corpora.OFFLINE_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(hub_corpora, "_ENTRIES", {})
    monkeypatch.setattr(hub_corpora, "_ANSWERED", {})

    def revision(dataset: str, rev: str | None) -> str:
        return state["commit"]

    def stream(member: Member, rev: str) -> list[str]:
        with open(state["calls"], "a", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()} {rev}\n")
        time.sleep(state["seconds"])  # long enough for every caller to arrive meanwhile
        return TEXTS

    monkeypatch.setattr(hub_corpora, "hub_revision", revision)
    monkeypatch.setattr(hub_corpora, "_stream_texts", stream)
    return state


def _streams(hub: dict) -> list[str]:
    path = hub["calls"]
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def _member() -> Member:
    return parse_source(SPEC).members[0]


def _read_entry(barrier, results) -> None:  # runs in a forked child
    try:
        barrier.wait(timeout=30)
        entry = hub_corpora.hub_entry(_member())
        texts = hub_corpora.hub_documents(_member())
        results.put(
            (str(entry.path), entry.revision, entry.fingerprint, entry.offline, tuple(texts))
        )
    except BaseException as exc:
        results.put(f"{type(exc).__name__}: {exc}")


def test_processes_asking_at_once_stream_once_and_read_the_same_entry(hub: dict) -> None:
    ctx = mp.get_context("fork")
    barrier, results = ctx.Barrier(PROCESSES), ctx.Queue()
    children = [ctx.Process(target=_read_entry, args=(barrier, results)) for _ in range(PROCESSES)]
    for child in children:
        child.start()
    got = [results.get(timeout=60) for _ in children]
    for child in children:
        child.join(timeout=30)
    assert all(isinstance(g, tuple) for g in got), got
    assert len(_streams(hub)) == 1  # one process streamed, the others waited and read its rows
    assert len(set(got)) == 1
    path, revision, _, offline, texts = got[0]
    assert (revision, offline, list(texts)) == ("abc123", False, TEXTS)
    assert check_entry(Path(path)).status == "ok"
    assert [p.name for p in Path(path).parent.iterdir() if ".tmp-" in p.name] == []


def test_a_complete_entry_is_not_rebuilt_when_the_hub_moves(
    hub: dict, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    first = hub_corpora.hub_entry(_member())
    documents = first.path / hub_corpora.DOCUMENTS
    before = (first.path.stat().st_ino, documents.stat().st_ino)
    monkeypatch.setattr(hub_corpora, "_ENTRIES", {})  # a new process, with the hub moved on
    hub["commit"] = "def456"
    again = hub_corpora.hub_entry(_member())
    assert len(_streams(hub)) == 1
    assert (again.path, again.revision, again.fingerprint) == (
        first.path,
        "abc123",
        first.fingerprint,
    )
    assert not again.offline  # the hub was asked
    assert (again.path.stat().st_ino, documents.stat().st_ino) == before  # the same files
    err = capsys.readouterr().err
    assert "cached at commit abc123" in err and "now at def456" in err and str(first.path) in err
    assert hub_corpora.hub_documents(_member()) == TEXTS


def test_a_damaged_entry_is_rebuilt(hub: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    hub["seconds"] = 0.0
    first = hub_corpora.hub_entry(_member())
    with open(first.path / hub_corpora.DOCUMENTS, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"text": "stray"}) + "\n")  # no longer its recorded size
    monkeypatch.setattr(hub_corpora, "_ENTRIES", {})
    monkeypatch.setattr(hub_corpora, "_ANSWERED", {})
    again = hub_corpora.hub_entry(_member())
    assert len(_streams(hub)) == 2
    assert check_entry(again.path).status == "ok" and again.fingerprint == first.fingerprint
    assert hub_corpora.hub_documents(_member()) == TEXTS
