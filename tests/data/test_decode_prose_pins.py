"""Decoding the prose corpora from their archives: which tarball members are Brown files and
addresses (and what an archive without any, or a folder in their place, gives), Brown's
malformed tokens and whitespace-only lines, a document's genre letter, control characters in
an address, the lazy-load database checks, the janeaustenr variables expected, and how the KJV's
``bible`` program is run (its environment, its failures as one line) and its lines grouped.
Debian packages are stood in for by what ``unpack_deb`` would extract, so no ``dpkg-deb`` is
needed."""

from __future__ import annotations

import gzip
import json
import struct
import tarfile
from pathlib import Path

import numpy as np
import pytest
from data_helpers import _add_bytes
from test_data_decode import _lazyload_db, _r_bytes

from longred_bench.data import decode_prose
from longred_bench.data.corpora import read_documents
from longred_bench.errors import UserError


def _tgz(path: Path, members: list[tuple[str, bytes]], folders: tuple[str, ...] = ()) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name in folders:
            info = tarfile.TarInfo(name)
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
        for name, data in members:
            _add_bytes(tar, name, data)
    return path


# --- Brown ------------------------------------------------------------------------------------


@pytest.mark.parametrize("token", ["/nn", "The/", "/"])
def test_a_token_without_a_word_or_a_tag_is_rejected(token: str) -> None:
    """``word/tag`` needs both sides of its last slash."""
    with pytest.raises(ValueError, match="not a word/tag token"):
        decode_prose.brown_tokens(f"The/at {token}")


@pytest.mark.parametrize(
    ("raw", "text"),
    [("It/pps rained/vbd ./.\n   ", "It rained."), ("  \nIt/pps rained/vbd ./.", "It rained.")],
)
def test_a_line_of_spaces_at_a_files_edge_adds_no_paragraph(raw: str, text: str) -> None:
    """A whitespace-only line with no blank line beside it is no (empty) headline."""
    assert decode_prose.brown_text(raw) == text


def test_only_genre_files_of_two_digits_become_documents(tmp_path: Path) -> None:
    """``package/c<genre><2 digits>`` files alone are documents, each with its genre's letter
    and name; other names and a folder of such a name are skipped."""
    tgz = _tgz(
        tmp_path / "b.tgz",
        [
            ("package/ca01", b"First/rb ./.\n"),
            ("package/ca001", b"No/rb ./.\n"),
            ("package/cr1", b"No/rb ./.\n"),
            ("package/cats.txt", b"ca01 A\n"),
        ],
        folders=("package/cp09",),
    )
    decode_prose.decode_brown({"b": tgz}, tmp_path / "work", tmp_path)
    (doc,) = read_documents(tmp_path / "documents.jsonl", "brown")
    assert (doc.doc_id, doc.text) == ("ca01", "First.")
    assert doc.meta == {"category": "a", "genre": "press: reportage"}


def test_an_archive_without_brown_files_is_refused(tmp_path: Path) -> None:
    tgz = _tgz(tmp_path / "b.tgz", [("package/README", b"BROWN CORPUS\n")])
    with pytest.raises(ValueError, match=r"no Brown text files .* in b\.tgz"):
        decode_prose.decode_brown({"b": tgz}, tmp_path / "work", tmp_path)
    assert not (tmp_path / "documents.jsonl").exists()


# --- State of the Union addresses ---------------------------------------------------------------


def test_control_characters_in_an_address_become_spaces() -> None:
    """Every ASCII control character, DEL included, separates words as a space would."""
    assert decode_prose.sotu_text("a\x1bb\x0ec\x7fd\x00e") == "a b c d e"


def _address(stem: str) -> list[tuple[str, bytes]]:
    record = {"name": "Harry S Truman", "party": "Democratic", "text": "An address."}
    return [(f"package/data/{stem}.txt", b"An address."),
            (f"package/data/{stem}.json", json.dumps(record).encode())]  # fmt: skip


def test_only_addresses_named_by_a_four_digit_year_are_read(tmp_path: Path) -> None:
    """A file not named ``<4-digit year>_<president>_<party>`` and a folder are skipped."""
    members = [*_address("1950_harry_s_truman_d"), *_address("195_harry_s_truman_d")]
    tgz = _tgz(tmp_path / "s.tgz", members, folders=("package/data/1951_harry_s_truman_d.txt",))
    decode_prose.decode_sotu({"s": tgz}, tmp_path / "work", tmp_path)
    docs = read_documents(tmp_path / "documents.jsonl", "sotu")
    assert [d.doc_id for d in docs] == ["1950_harry_s_truman"]


def test_an_archive_without_addresses_is_refused(tmp_path: Path) -> None:
    tgz = _tgz(tmp_path / "s.tgz", [("package/README.md", b"# sotu\n")])
    with pytest.raises(ValueError, match=r"no addresses .* in s\.tgz"):
        decode_prose.decode_sotu({"s": tgz}, tmp_path / "work", tmp_path)


# --- Debian packages ------------------------------------------------------------------------


def test_unpacking_a_deb_without_dpkg_deb_is_the_users_error(tmp_path, monkeypatch) -> None:
    """Without ``dpkg-deb`` on PATH the message names the program and the package."""
    monkeypatch.setattr(decode_prose.shutil, "which", lambda name: None)
    with pytest.raises(UserError, match=r"dpkg-deb is needed to unpack x\.deb"):
        decode_prose.unpack_deb(tmp_path / "x.deb", tmp_path / "out")


def _write_index(tmp_path: Path, index: dict) -> Path:
    rdx = tmp_path / "Rdata.rdx"
    rdx.write_bytes(gzip.compress(_r_bytes(index)))
    return rdx


@pytest.mark.parametrize(
    ("index", "said"),
    [
        ({"variables": {}, "references": {}}, "is not a lazy-load index"),
        ({"variables": {}, "compressed": np.array([False])}, "only zlib-compressed"),
    ],
)
def test_a_lazy_load_index_of_another_kind_is_refused(tmp_path: Path, index, said) -> None:
    """An index without its ``compressed`` flag, or flagging another compression, is refused."""
    rdx = _write_index(tmp_path, index)
    with pytest.raises(ValueError, match=said):
        decode_prose.read_lazyload_db(rdx, tmp_path / "Rdata.rdb")


def test_a_blob_of_another_length_than_it_says_is_refused(tmp_path: Path) -> None:
    """A blob's 4-byte header gives the length of its object: one that differs is damage."""
    _lazyload_db(tmp_path, {"a": ["x"]}, gzip_index=False)
    rdb = tmp_path / "Rdata.rdb"
    blob = rdb.read_bytes()
    (length,) = struct.unpack(">I", blob[:4])
    rdb.write_bytes(struct.pack(">I", length + 1) + blob[4:])
    with pytest.raises(ValueError, match=f"Rdata.rdb: a has {length} bytes, not {length + 1}"):
        decode_prose.read_lazyload_db(tmp_path / "Rdata.rdx", rdb)


def test_janeaustenr_with_other_variables_is_refused(tmp_path: Path, monkeypatch) -> None:
    """The package's data must hold the six novels, no more and no fewer."""
    novels = {name: ["x"] for name in decode_prose.AUSTEN_TITLES if name != "emma"}

    def unpacked(deb: Path, dest: Path) -> None:
        _lazyload_db(dest / decode_prose._AUSTEN_DATA, novels, gzip_index=True)

    monkeypatch.setattr(decode_prose, "unpack_deb", unpacked)
    with pytest.raises(ValueError, match="unexpected janeaustenr variables"):
        decode_prose.decode_austen({"a": tmp_path / "a.deb"}, tmp_path / "work", tmp_path)


# --- KJV ------------------------------------------------------------------------------------


def test_kjv_lines_of_spaces_are_skipped_and_verses_stripped() -> None:
    books = decode_prose.kjv_books(["   ", "Ge1:1 In the beginning.  ", "\t", "Ge1:2 And."])
    assert books == {"Ge": [["In the beginning.", "And."]]}


def _bible(tmp_path: Path, monkeypatch, body: str | None) -> None:
    """``unpack_deb`` extracting a ``usr/bin/bible`` script of ``body`` (None: nothing)."""

    def unpacked(deb: Path, dest: Path) -> None:
        if body is None:
            return
        script = dest / "usr/bin/bible"
        script.parent.mkdir(parents=True, exist_ok=True)
        script.write_text("#!/bin/sh\n" + body)
        script.chmod(0o755)

    monkeypatch.setattr(decode_prose, "unpack_deb", unpacked)


def _decode_kjv(tmp_path: Path) -> None:
    decode_prose.decode_kjv({"k": tmp_path / "k.deb"}, tmp_path / "work", tmp_path)


def test_the_bible_program_runs_in_the_c_locale_without_columns(tmp_path, monkeypatch) -> None:
    """The program's output must not depend on the terminal's width or the user's locale."""
    verses = "".join(f'echo "{b}1:1 Verse of {b}."\n' for b, _ in decode_prose.KJV_BOOKS)
    checks = (
        '[ -z "$COLUMNS" ] && [ "$LC_ALL" = C ] || { echo "env: $COLUMNS $LC_ALL" >&2; exit 3; }\n'
    )
    _bible(tmp_path, monkeypatch, checks + verses)
    monkeypatch.setenv("COLUMNS", "40")
    monkeypatch.setenv("LC_ALL", "en_US.UTF-8")
    _decode_kjv(tmp_path)
    docs = read_documents(tmp_path / "documents.jsonl", "kjv")
    assert docs[0].meta == {"book_number": "1", "abbreviation": "Ge"}
    assert docs[0].text == "Verse of Ge."


def test_a_failing_bible_program_is_said_by_its_last_line(tmp_path, monkeypatch) -> None:
    _bible(tmp_path, monkeypatch, "echo 'starting' >&2; echo 'no such book: Rev' >&2; exit 4\n")
    with pytest.raises(UserError) as info:
        _decode_kjv(tmp_path)
    assert str(info.value) == "source 'kjv': the packaged bible program failed: no such book: Rev"


def test_a_silent_failing_bible_program_is_said_by_its_exit_status(tmp_path, monkeypatch) -> None:
    _bible(tmp_path, monkeypatch, "exit 4\n")
    with pytest.raises(UserError, match=r"the packaged bible program failed: exit status 4$"):
        _decode_kjv(tmp_path)


def test_a_missing_bible_program_is_the_users_error(tmp_path, monkeypatch) -> None:
    _bible(tmp_path, monkeypatch, None)
    with pytest.raises(UserError, match="source 'kjv': cannot run the packaged bible program"):
        _decode_kjv(tmp_path)


def test_books_out_of_their_order_are_refused(tmp_path, monkeypatch) -> None:
    """Every book, in canonical order, or the program's output is not trusted."""
    _bible(tmp_path, monkeypatch, 'echo "Exo1:1 Second."\necho "Ge1:1 First."\n')
    with pytest.raises(ValueError, match="unexpected KJV books"):
        _decode_kjv(tmp_path)
    assert not (tmp_path / "documents.jsonl").exists()
