"""Integrity of the derived caches: tokenised corpora (``tokens/``) and trained tokenizers
(``tokenizers/``) carry size and sha256 records, a damaged one is rebuilt with a warning, and
``data verify`` lists them; and every entry written in place is readable by group and others,
as its folder is (a library's private files included)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import torch

from longred_bench.cache import atomic_dir, file_manifest_path, write_file_manifest
from longred_bench.cli import main
from longred_bench.training.data import _read_token_cache
from longred_bench.training.pretrain import tokenizer as tokenizer_module
from longred_bench.training.pretrain.tokenizer import tokenizer_for_pretraining

TEXTS = [f"the cat number {i} sat on the mat and looked at the dog {i % 7}." for i in range(300)]


def _write_tokens(path: Path) -> list[torch.Tensor]:
    ids = [torch.arange(5, dtype=torch.int32), torch.arange(3, 9, dtype=torch.int32)]
    buffer = io.BytesIO()
    torch.save(ids, buffer)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buffer.getvalue())
    write_file_manifest(path, {"kind": "tokens"})
    return ids


def test_token_cache_reads_intact_and_rebuilds_damaged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "tokens" / "fp" / "brown-train.pt"
    assert _read_token_cache(path) is None  # absent: no warning
    assert capsys.readouterr().err == ""
    ids = _write_tokens(path)
    got = _read_token_cache(path)
    assert got is not None and all(torch.equal(a, b) for a, b in zip(got, ids, strict=True))
    path.write_bytes(path.read_bytes()[:20])
    assert _read_token_cache(path) is None
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"warning: token cache {path} is damaged (brown-train.pt is 20 bytes")
    assert "\n" not in err
    file_manifest_path(path).unlink()  # an older file without records that does not load
    assert _read_token_cache(path) is None
    assert "does not load" in capsys.readouterr().err


def test_damaged_tokenizer_cache_is_trained_again(
    cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LONGRED_CACHE", str(cache))
    monkeypatch.setattr(tokenizer_module, "tokenizer_texts", lambda: TEXTS)
    first = tokenizer_for_pretraining("bpe", 300)
    entry = cache / "tokenizers" / "bpe-300-v1"
    assert (entry / "manifest.json").is_file()
    vocab = first.get_vocab()
    (entry / "tokenizer.json").write_text("{")
    again = tokenizer_for_pretraining("bpe", 300)
    err = capsys.readouterr().err
    assert "tokenizer cache" in err and "training it again" in err
    assert again.get_vocab() == vocab  # deterministic training: the same tokenizer back


def test_verify_lists_tokenizers_and_token_files(
    cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LONGRED_CACHE", str(cache))
    monkeypatch.setattr(tokenizer_module, "tokenizer_texts", lambda: TEXTS)
    tokenizer_for_pretraining("bpe", 300)
    tokens = cache / "tokens" / "fp" / "brown-train.pt"
    _write_tokens(tokens)
    main(["data", "verify", "--cache", str(cache)])
    lines = {line.split()[1].rstrip(":"): line for line in capsys.readouterr().out.splitlines()}
    assert lines["tokenizers/bpe-300-v1"].startswith("ok")
    assert lines["tokens/fp/brown-train.pt"].startswith("ok")
    tokens.write_bytes(b"x" * tokens.stat().st_size)
    assert main(["data", "verify", "--cache", str(cache)]) == 1
    lines = {line.split()[1].rstrip(":"): line for line in capsys.readouterr().out.splitlines()}
    assert lines["tokens/fp/brown-train.pt"].startswith("corrupt")


def test_verify_results_checks_a_compare_out_folder(
    tmp_path: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from longred_bench.jobs.units import save_records

    out = tmp_path / "cmp"
    good = out / "runs" / "smol" / "short" / "eval.jsonl"
    bad = out / "runs" / "smol-abf" / "short" / "eval.jsonl"
    for path in (good, bad):
        save_records(path, {"m": 1}, [{"score": 1}], 0, "cpu")
    bad.write_bytes(bad.read_bytes()[:10])
    assert main(["data", "verify", "--results", str(out), "--cache", str(cache)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"ok          {good.parent.as_posix()}"
    assert lines[1].startswith(f"corrupt     {bad.parent.as_posix()}: eval.jsonl is 10 bytes")
    assert "run compare again" in lines[1]
    assert lines[-1] == "2 entries checked, 1 bad"  # the cache itself was not checked
    assert main(["data", "verify", "--results", str(tmp_path / "none")]) == 1
    assert "missing" in capsys.readouterr().out
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    assert main(["data", "verify", "--results", str(a_file)]) == 1
    assert f"{a_file} is a file: pass the folder `compare --out` wrote" in capsys.readouterr().out
    plain = tmp_path / "eval-out"  # an `eval --out`: records, no manifest; never "delete it"
    plain.mkdir()
    (plain / "eval.jsonl").write_text('{"score": 1}\n')
    assert main(["data", "verify", "--results", str(plain)]) == 1  # a folder no compare wrote
    out = capsys.readouterr().out
    assert out.startswith(f"unrecorded  {plain.as_posix()}: results no compare wrote (an "
                          "eval's or drift's --out?); no manifest records their files, so there "
                          "is nothing to check\n")  # fmt: skip
    assert "delete" not in out
    assert out.splitlines()[-1] == "1 entry checked, 0 bad, 1 folder(s) without results"
    # the same folder's parent as a --cache read its results as cache entries ("ruler" is the
    # cache's RULER samples) and said to delete them: refused, naming what it holds
    named = tmp_path / "outs" / "ruler"
    named.mkdir(parents=True)
    (named / "eval.jsonl").write_text('{"score": 1}\n')
    assert main(["data", "verify", "--cache", str(tmp_path / "outs")]) == 2
    err = capsys.readouterr().err
    assert f"--cache {tmp_path / 'outs'} holds results (ruler/eval.jsonl), not a data cache" in err
    assert "delete" not in err and f"--results {tmp_path / 'outs'}" in err
    empty = tmp_path / "mistyped"  # a folder no compare wrote is no pass
    empty.mkdir()
    assert main(["data", "verify", "--results", str(empty)]) == 1
    out = capsys.readouterr().out
    assert f"no cached results under {empty}: pass the folder `compare --out` wrote" in out
    assert out.splitlines()[-1] == "0 entries checked, 0 bad, 1 folder(s) without results"


def test_a_cache_folder_this_user_cannot_enter_is_no_error(tmp_path, monkeypatch, capsys) -> None:
    """A folder in the cache a user cannot enter (a volume's root-owned lost+found) ended the
    results check in a PermissionError traceback."""
    from pathlib import Path

    cache = tmp_path / "cache"
    (cache / "lost+found").mkdir(parents=True)
    locked = cache / "lost+found"
    is_file = Path.is_file

    def denied(self):
        if self.parent == locked:
            raise PermissionError(13, "Permission denied", str(self))
        return is_file(self)

    monkeypatch.setattr(Path, "is_file", denied)
    assert main(["data", "list", "--cache", str(cache)]) == 0


_GENERATE_SCRIPT = """
import os, sys, time
from pathlib import Path
from longred_bench.taskdata.ruler import store
from longred_bench.models.zoo import byte_tokenizer

real = store.generate
def together(*args, **kwargs):  # both processes are generating before either writes
    barrier = Path(sys.argv[2])
    (barrier / str(os.getpid())).touch()
    deadline = time.monotonic() + 240  # the other may start slowly on a loaded machine
    while len(list(barrier.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    return real(*args, **kwargs)
store.generate = together
samples = store.load_or_generate(
    "niah_single_1", byte_tokenizer(), 512, 3, 0, cache=Path(sys.argv[1])
)
print(len(samples))
"""


def test_two_processes_generating_one_sample_file_leave_one_good_entry(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from data_helpers import ensure_cached

    ensure_cached(request, "brown")  # the haystack of the samples both processes generate
    import subprocess
    import sys

    from longred_bench.cache import check_file_entry
    from longred_bench.models.zoo import byte_tokenizer
    from longred_bench.taskdata.ruler import store

    cache, barrier = tmp_path / "ruler", tmp_path / "barrier"
    barrier.mkdir()
    argv = [sys.executable, "-c", _GENERATE_SCRIPT, str(cache), str(barrier)]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [proc.communicate(timeout=600)[0].split() for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0]
    assert [out[-1] for out in outputs] == ["3", "3"]
    assert len(list(barrier.iterdir())) == 2  # they did generate at the same time
    path = store.cache_path("niah_single_1", byte_tokenizer(), 512, 3, 0, cache=cache)
    assert check_file_entry(path, hashes=True).status == "ok"
    assert store.read_samples(path, 3) is not None
    names = sorted(p.name for p in path.parent.iterdir())  # no temporary file left behind
    assert names == [path.name, path.name + ".manifest.json"]


def test_atomic_dir_lets_others_read_what_a_library_wrote_private(tmp_path: Path) -> None:
    """safetensors writes 0600: a model saved in a shared run cache was its owner's alone,
    in a folder others could list (0755)."""
    final = tmp_path / "model"
    with atomic_dir(final) as tmp:
        (tmp / "sub").mkdir()
        for name in ("weights.safetensors", "sub/tokenizer.json"):
            (tmp / name).write_text("x")
            (tmp / name).chmod(0o600)
    modes = {p.name: p.stat().st_mode & 0o777 for p in final.rglob("*") if p.is_file()}
    assert modes == {"weights.safetensors": 0o644, "tokenizer.json": 0o644}
