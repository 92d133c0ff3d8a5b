"""A text file replaced at its path is read again: ``drift --texts``, ``compare --drift-texts``
and ``eval --suite ppl --corpus`` answered from the old file's results (or saved windows), as a
model folder retrained at its path already was not."""

from __future__ import annotations

import os
from pathlib import Path

from longred_bench.cli import main

WORDS = "the cat sat on the mat and looked at the door for a while before it slept. "
OTHER = "a ship sailed far over grey seas while birds cried above the cold waves there. "


def _write(path: Path, text: str, when: int) -> None:
    """``text`` (repeated) at ``path``, with modification time ``when`` (the replacement's
    stamp differs from the first's however fast the test runs)."""
    path.write_text(text * 60)
    os.utime(path, ns=(when, when))


def test_drift_measures_again_when_its_texts_file_is_replaced(tmp_path, capsys):
    texts, out = tmp_path / "t.txt", tmp_path / "d"
    argv = ["drift", "--original", "tiny-random", "--rope", "pi:factor=2", "--texts", str(texts),
            "--num-texts", "2", "--seq-len", "32", "--out", str(out), "--quiet"]  # fmt: skip
    _write(texts, WORDS, 10**18)
    assert main(argv) == 0
    first = (out / "drift.jsonl").read_text()
    capsys.readouterr()
    assert main(argv) == 0
    assert "holds this drift, measured" in capsys.readouterr().out  # the same file: reused
    _write(texts, OTHER, 2 * 10**18)
    assert main(argv) == 0
    assert f"[drift] the files of {texts} changed since" in capsys.readouterr().out
    assert (out / "drift.jsonl").read_text() != first


def test_compare_measures_drift_again_when_its_texts_file_is_replaced(tmp_path, monkeypatch):
    from longred_bench.jobs import drift

    texts, out = tmp_path / "t.txt", tmp_path / "c"
    argv = ["compare", "--original", "tiny-random", "--rope", "pi:factor=2", "--suites", "drift",
            "--drift-texts", str(texts), "--drift-num-texts", "2", "--drift-seq-len", "32",
            "--out", str(out), "--quiet"]  # fmt: skip
    _write(texts, WORDS, 10**18)
    assert main(argv) == 0
    runs, run_drift = [], drift.run_drift
    monkeypatch.setattr(
        drift, "run_drift", lambda cfg, **kw: runs.append(1) or run_drift(cfg, **kw)
    )
    assert main(argv) == 0 and runs == []
    _write(texts, OTHER, 2 * 10**18)
    assert main(argv) == 0 and runs == [1]


def test_eval_ppl_measures_again_when_its_corpus_file_is_replaced(tmp_path, capsys):
    import json

    corpus, out = tmp_path / "c.txt", tmp_path / "e"
    argv = ["eval", "--model", "tiny-random", "--suite", "ppl", "--corpus", str(corpus),
            "--lengths", "64", "--samples", "1", "--out", str(out), "--quiet"]  # fmt: skip

    def ppl() -> list[float]:
        records = [json.loads(line) for line in (out / "eval.jsonl").read_text().splitlines()]
        return [r["nll"] for r in records if r.get("kind") == "ppl"]

    _write(corpus, WORDS, 10**18)
    assert main(argv) == 0
    first = ppl()
    _write(corpus, OTHER, 2 * 10**18)
    assert main(argv) == 0
    assert first and ppl() != first
    assert not list(out.rglob("ppl-/*"))  # the corpus path made no folders of the file name
