"""A request-cache file (the model responses an evaluation saved) that a kill, a full disk or a
copy cut short left unreadable: set aside beside itself with a warning naming it, its
responses computed again, never a traceback from lm-eval's SQLite layer."""

from __future__ import annotations

from pathlib import Path

import pytest
from data_helpers import ensure_cached
from interrupt_helpers import bare_records, patch_responses, written_as_declared

from longred_bench import cli
from longred_bench.evaluation.request_db import set_aside_damaged, unreadable

RULER = ["--suite", "ruler", "--lengths", "1024", "--samples", "2", "--tasks"]
RULER += ["longred_ruler_niah_single_1", "longred_ruler_niah_single_2", "--quiet"]


def _saved(db: Path, rows: int) -> None:
    """A request cache of ``rows`` responses, as lm-eval writes one (sqlitedict)."""
    from sqlitedict import SqliteDict

    with SqliteDict(str(db), autocommit=True) as saved:
        for i in range(rows):
            saved[f"request {i}"] = "response " * 200


def test_a_cut_request_cache_is_set_aside_and_named(tmp_path: Path, capsys) -> None:
    prefix = tmp_path / "requests" / "abc"
    prefix.parent.mkdir()
    good, cut = Path(f"{prefix}_rank0.db"), Path(f"{prefix}_rank1.db")
    _saved(good, 20)
    _saved(cut, 20)
    assert unreadable(good) is None and unreadable(cut) is None
    cut.write_bytes(cut.read_bytes()[:1000])  # cut short inside its first page
    assert unreadable(cut) is not None

    moved = set_aside_damaged(prefix)

    assert moved == [cut.with_name(cut.name + ".damaged")] and moved[0].is_file()
    assert not cut.exists() and good.is_file()  # the readable one is left as it is
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"warning: saved model responses {cut} are damaged (")
    assert err.endswith(
        "set aside as abc_rank1.db.damaged; the responses it held are computed again"
    )


def test_an_empty_or_missing_request_cache_is_no_damage(tmp_path: Path, capsys) -> None:
    assert set_aside_damaged(tmp_path / "none" / "abc") == []
    Path(f"{tmp_path / 'abc'}_rank0.db").write_bytes(b"")  # SQLite: an empty database
    assert set_aside_damaged(tmp_path / "abc") == []
    assert capsys.readouterr().err == ""


def test_garbage_in_place_of_a_request_cache_is_set_aside(tmp_path: Path) -> None:
    db = Path(f"{tmp_path / 'abc'}_rank0.db")
    db.write_bytes(b"not a database" * 100)
    assert set_aside_damaged(tmp_path / "abc") == [db.with_name(db.name + ".damaged")]


@pytest.mark.integration
def test_eval_resumed_over_a_damaged_request_cache_ends_as_an_uninterrupted_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, request
) -> None:
    """An interrupted ``eval`` whose saved responses were then cut short: the same command
    warns, computes them again and writes what an uninterrupted run writes (it stopped in
    ``sqlite3.DatabaseError: database disk image is malformed``)."""
    ensure_cached(request, "brown")
    whole = tmp_path / "whole"
    assert cli.main(["eval", "--model", "tiny-random", *RULER, "--out", str(whole)]) == 0
    out = tmp_path / "cut"
    argv = ["eval", "--model", "tiny-random", *RULER, "--out", str(out)]
    patch_responses(monkeypatch, 3)
    assert cli.main(argv) == 130
    monkeypatch.undo()
    (db,) = (out / "requests").glob("*_rank0.db")
    db.write_bytes(db.read_bytes()[:1000])
    capsys.readouterr()

    assert cli.main(argv) == 0

    err = capsys.readouterr().err
    assert f"warning: saved model responses {db} are damaged (" in err
    assert db.with_name(db.name + ".damaged").is_file()
    assert bare_records(out / "eval.jsonl") == bare_records(whole / "eval.jsonl")
    written_as_declared(out, "eval")


def test_damage_sqlite_reads_without_an_error_is_named_in_one_line(tmp_path: Path, capsys) -> None:
    """A file SQLite opens and reads, whose integrity check lists dozens of damaged cells (a
    table page's cell pointers zeroed): set aside with one warning line naming the first."""
    db = Path(f"{tmp_path / 'abc'}_rank0.db")
    _saved(db, 40)
    data = bytearray(db.read_bytes())
    page = 4096  # sqlitedict's page size; page 3 holds table rows, its cell pointers at 8
    assert len(data) >= 4 * page
    data[2 * page + 8 : 2 * page + 72] = bytes(64)
    db.write_bytes(bytes(data))

    why = unreadable(db)

    assert why is not None and "\n" not in why and why.startswith("On tree page ")
    assert why.endswith("more problem(s)")
    assert set_aside_damaged(tmp_path / "abc") == [db.with_name(db.name + ".damaged")]
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{db} are damaged (On tree page " in err
