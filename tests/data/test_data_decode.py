"""Data decoders and corpora: Brown tag stripping, Austen/KJV from .deb files built locally with
dpkg-deb, deterministic document splits.
"""

from __future__ import annotations

import gzip
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest
from data_helpers import BROWN_CA01, BROWN_CB02, _pin, _sha

from longred_bench.cache import write_manifest
from longred_bench.data import corpora, decode_prose
from longred_bench.data import fetch as fetch_module

# --- Brown decoding -------------------------------------------------------------------------


def test_brown_snippet_tags_stripped_and_detokenized() -> None:
    snippet = (
        "The/at Fulton/np-tl County/nn-tl Grand/jj-tl Jury/nn-tl said/vbd ,/, ``/`` no/at "
        "evidence/nn ''/'' ./."
    )
    words = [word for word, _ in decode_prose.brown_tokens(snippet)]
    assert decode_prose.detokenize(words) == 'The Fulton County Grand Jury said, "no evidence".'


def test_brown_detokenize_brackets_single_quotes_and_slashes() -> None:
    words = [w for w, _ in decode_prose.brown_tokens(BROWN_CB02 + " (/( 1/2/cd //in x/nn )/)")]
    assert decode_prose.detokenize(words) == "More 'pro' letters than 'con'; done! (1/2 / x)"


def test_brown_malformed_token_is_rejected() -> None:
    with pytest.raises(ValueError, match="word/tag"):
        decode_prose.brown_tokens("The/at Fulton")


def test_brown_text_keeps_paragraphs_and_separates_headlines() -> None:
    assert decode_prose.brown_text(BROWN_CA01) == (
        'The Fulton County Grand Jury said, "no evidence".\n\n'
        "Merger proposed\n\n"
        "However, the jury said it believes (1/2). It asked: what?"
    )


# --- splits ---------------------------------------------------------------------------------

AUSTEN_IDS = list(decode_prose.AUSTEN_TITLES)


def test_splits_are_deterministic_disjoint_and_non_empty() -> None:
    assert corpora.assign_splits("austen", AUSTEN_IDS) == {
        "persuasion": "validation",
        "prideprejudice": "test",
        "emma": "train",
        "mansfieldpark": "train",
        "northangerabbey": "train",
        "sensesensibility": "train",
    }
    assert corpora.assign_splits("austen", reversed(AUSTEN_IDS)) == corpora.assign_splits(
        "austen", AUSTEN_IDS
    )
    for n in (3, 4, 7, 66, 500):
        ids = [f"d{i:03d}" for i in range(n)]
        assignment = corpora.assign_splits("any", ids)
        counts = {
            split: list(assignment.values()).count(split)
            for split in ("train", "validation", "test")
        }
        k = max(1, round(n / 10))
        assert counts == {"train": n - 2 * k, "validation": k, "test": k}
    with pytest.raises(ValueError, match="splits need 3"):
        corpora.assign_splits("any", ["a", "b"])


def test_load_documents_splits_partition_the_corpus(cache: Path) -> None:
    entry = cache / "corpora/austen"
    entry.mkdir(parents=True)
    docs = [corpora.Document("austen", i, i.title(), f"text of {i}") for i in AUSTEN_IDS]
    corpora.write_documents(entry / "documents.jsonl", docs)
    write_manifest(entry)
    everything = corpora.load_documents("austen", cache=cache)
    assert everything == docs
    parts = {
        s: corpora.load_documents("austen", s, cache=cache) for s in ("train", "validation", "test")
    }
    assert [d.doc_id for d in parts["validation"]] == ["persuasion"]
    assert [d.doc_id for d in parts["test"]] == ["prideprejudice"]
    assert len(parts["train"]) == 4
    assert sorted(d.doc_id for p in parts.values() for d in p) == sorted(AUSTEN_IDS)


def test_write_documents_rejects_duplicate_ids(tmp_path: Path) -> None:
    doc = corpora.Document("kjv", "job", "Job", "x")
    with pytest.raises(ValueError, match="duplicate"):
        corpora.write_documents(tmp_path / "d.jsonl", [doc, doc])


# --- Debian-packaged corpora, built locally -------------------------------------------------

needs_dpkg = pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="needs dpkg-deb")


def _build_deb(root: Path, package: str, version: str, out: Path) -> Path:
    (root / "DEBIAN").mkdir(parents=True, exist_ok=True)
    (root / "DEBIAN/control").write_text(
        f"Package: {package}\nVersion: {version}\nArchitecture: all\n"
        "Maintainer: longred tests <tests@localhost>\nDescription: test fixture\n"
    )
    subprocess.run(
        ["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(root), str(out)],
        check=True,
        capture_output=True,
    )
    return out


def _r_bytes(value: object) -> bytes:
    import rdata

    r_data = rdata.conversion.convert_python_to_r_data(value, file_type="rds")
    return rdata.unparser.unparse_data(r_data, file_type="rds")


def _lazyload_db(data_dir: Path, variables: dict[str, list[str]], *, gzip_index: bool) -> None:
    blob = b""
    index = {}
    for name, lines in variables.items():
        serialized = _r_bytes(np.array(lines))
        packed = struct.pack(">I", len(serialized)) + zlib.compress(serialized)
        index[name] = np.array([len(blob), len(packed)], dtype=np.int32)
        blob += packed
    raw_index = _r_bytes({"variables": index, "references": {}, "compressed": np.array([True])})
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "Rdata.rdb").write_bytes(blob)
    packed_index = gzip.compress(raw_index) if gzip_index else zlib.compress(raw_index)
    (data_dir / "Rdata.rdx").write_bytes(packed_index)


@pytest.mark.parametrize("gzip_index", [True, False])
def test_read_lazyload_db(tmp_path: Path, gzip_index: bool) -> None:
    _lazyload_db(tmp_path, {"a": ["x", "", "y"], "b": ["z"]}, gzip_index=gzip_index)
    values = decode_prose.read_lazyload_db(tmp_path / "Rdata.rdx", tmp_path / "Rdata.rdb")
    assert {name: [str(v) for v in value] for name, value in values.items()} == {
        "a": ["x", "", "y"],
        "b": ["z"],
    }


def test_paragraphs_from_lines_unwraps() -> None:
    lines = ["EMMA", "", "", "Emma Woodhouse, handsome,", "  clever, and rich", "", "THE END", ""]
    assert decode_prose.paragraphs_from_lines(lines) == (
        "EMMA\n\nEmma Woodhouse, handsome, clever, and rich\n\nTHE END"
    )


@needs_dpkg
def test_austen_from_local_deb(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "pkg"
    novels = {
        name: [name.upper(), "", f"First line of {name}", "goes on.", ""] for name in AUSTEN_IDS
    }
    _lazyload_db(root / decode_prose._AUSTEN_DATA, novels, gzip_index=True)
    archive_dir = tmp_path / "archives"
    archive_dir.mkdir()
    deb = _build_deb(
        root, "r-cran-janeaustenr", "1.0.0-1", archive_dir / "r-cran-janeaustenr_1.0.0-1_all.deb"
    )
    _pin(monkeypatch, "austen", (deb.name, _sha(deb)))
    fetch_module.fetch(["austen"], archive_dir, cache=cache)
    docs = corpora.load_documents("austen", cache=cache)
    assert [d.title for d in docs] == list(decode_prose.AUSTEN_TITLES.values())
    assert docs[4].text == "PRIDEPREJUDICE\n\nFirst line of prideprejudice goes on."


@needs_dpkg
def test_kjv_from_local_debs(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text_root, bin_root = tmp_path / "text", tmp_path / "bin"
    (text_root / "usr/lib").mkdir(parents=True)
    (text_root / "usr/lib/bible.data").write_text("")
    abbreviations = " ".join(abbreviation for abbreviation, _ in decode_prose.KJV_BOOKS)
    script = bin_root / "usr/bin/bible"
    script.parent.mkdir(parents=True)
    # Stands in for the packaged program: checks its arguments, prints two chapters per book.
    script.write_text(
        "#!/bin/sh\n"
        '[ "$1 $2 $4" = "-f -p Gen1:1-Rev22:21" ] && [ -f "$3/bible.data" ] || exit 3\n'
        f"for b in {abbreviations}; do\n"
        '  echo "${b}1:1 In the beginning of $b."; echo "${b}1:2 Second verse."\n'
        '  echo "${b}2:1 Chapter two."\n'
        "done\n"
    )
    script.chmod(0o755)
    archive_dir = tmp_path / "archives"
    archive_dir.mkdir()
    debs = [
        _build_deb(
            text_root, "bible-kjv-text", "4.38", archive_dir / "bible-kjv-text_4.38_all.deb"
        ),
        _build_deb(bin_root, "bible-kjv", "4.38", archive_dir / "bible-kjv_4.38_amd64.deb"),
    ]
    _pin(monkeypatch, "kjv", *[(deb.name, _sha(deb)) for deb in debs])
    fetch_module.fetch(["kjv"], archive_dir, cache=cache)
    docs = corpora.load_documents("kjv", cache=cache)
    assert len(docs) == 66
    assert (docs[0].doc_id, docs[0].title) == ("genesis", "Genesis")
    assert docs[0].text == "In the beginning of Ge. Second verse.\n\nChapter two."
    assert (docs[21].doc_id, docs[65].meta["book_number"]) == ("song-of-solomon", "66")


def test_kjv_books_rejects_non_verse_lines() -> None:
    books = decode_prose.kjv_books(["Ge1:1 A.", "Ge1:2 B.", "Ge2:1 C.", "1Jn1:1 D.", ""])
    assert books == {"Ge": [["A.", "B."], ["C."]], "1Jn": [["D."]]}
    with pytest.raises(ValueError, match="not a verse line"):
        decode_prose.kjv_books(["Genesis 1"])
