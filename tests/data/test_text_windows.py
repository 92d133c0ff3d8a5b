"""``longred_bench.data.texts.token_windows``: the measurement windows are consecutive,
non-overlapping slices of the text, a bare corpus name reads its test split, a ``.jsonl``
file gives the texts of its lines, and too few windows name the failing command's flags."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import longred_bench.data.corpora as corpora
from longred_bench.data.corpora import Document
from longred_bench.data.texts import token_windows
from longred_bench.errors import UserError
from longred_bench.models.zoo import byte_tokenizer


def test_windows_are_consecutive_and_do_not_overlap(tmp_path: Path) -> None:
    # One document, a byte tokenizer: window i is bytes [32 i, 32 i + 32) of the text.
    tok = byte_tokenizer()
    source = tmp_path / "t.txt"
    source.write_text("".join(f"word{i} " for i in range(100)), encoding="utf-8")
    full = tok(source.read_text(encoding="utf-8"), add_special_tokens=False)["input_ids"]
    windows = token_windows(tok, str(source), num_texts=4, seq_len=32)
    assert [w.tolist() for w in windows] == [full[32 * i : 32 * (i + 1)] for i in range(4)]


def test_a_bare_corpus_name_reads_the_test_split(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, str]] = []

    def documents(corpus: str, split: str = "all", **_: Any) -> list[Document]:
        asked.append((corpus, split))
        return [Document(corpus, "d", "d", "x" * 200)]

    monkeypatch.setattr(corpora, "load_documents", documents)
    token_windows(byte_tokenizer(), "austen", num_texts=2, seq_len=16)
    token_windows(byte_tokenizer(), "austen:train", num_texts=2, seq_len=16)
    assert asked == [("austen", "test"), ("austen", "train")]


def test_a_jsonl_file_gives_its_text_fields_not_its_json(tmp_path: Path) -> None:
    tok = byte_tokenizer()
    source = tmp_path / "docs.jsonl"
    texts = ["a" * 40, "b" * 40]
    source.write_text("".join(json.dumps({"text": t, "id": i}) + "\n" for i, t in enumerate(texts)))
    windows = token_windows(tok, str(source), num_texts=2, seq_len=32)
    assert [tok.decode(w) for w in windows] == ["a" * 32, "b" * 32]  # each line its document
    source.write_text(json.dumps({"content": "x" * 40}) + "\n")
    why = r"line 1 has no string field 'text' \(it has: content\); give each line a string text"
    with pytest.raises(UserError, match=why):
        token_windows(tok, str(source), num_texts=1, seq_len=32)


def test_windows_take_turns_over_the_documents_and_a_whole_document_fits(tmp_path) -> None:
    """Window k of every document before window k + 1 of any (each text's start first, not the
    first text's every window), and a document of exactly ``seq_len`` tokens is one window."""
    tok = byte_tokenizer()
    source = tmp_path / "docs.jsonl"
    texts = ["a" * 32 + "A" * 32, "b" * 32 + "B" * 32]
    source.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    windows = token_windows(tok, str(source), num_texts=3, seq_len=32)
    assert [tok.decode(w) for w in windows] == ["a" * 32, "b" * 32, "A" * 32]
    exact = tmp_path / "exact.txt"
    exact.write_text("x" * 32, encoding="utf-8")
    assert token_windows(tok, str(exact), num_texts=1, seq_len=32).shape == (1, 32)


def test_too_few_windows_name_the_flags_of_the_command_that_failed(tmp_path, capsys) -> None:
    """The line named drift's, compare's and eval's flags at once, whichever command failed;
    a reproduce worker's error keeps what asked for the windows across processes."""
    import pickle

    from longred_bench.cli import main
    from longred_bench.data.texts import TooFewWindows

    source = tmp_path / "t.txt"
    source.write_text("a few words only", encoding="utf-8")
    with pytest.raises(TooFewWindows) as got:
        token_windows(byte_tokenizer(), str(source), num_texts=5, seq_len=8, measure="ppl")
    assert got.value.for_command("eval").endswith("or give a longer text (--samples, --lengths)")
    again = pickle.loads(pickle.dumps(got.value))
    assert again.for_command("reproduce").endswith(
        "(the profile's evaluation.ppl.windows, evaluation.ruler.lengths)"
    )
    assert got.value.for_command("psa") == str(got.value)  # a command with no such flags
    argv = ["drift", "--original", "tiny-random", "--rope", "pi:factor=2", "--texts",
            str(source), "--num-texts", "50", "--seq-len", "8"]  # fmt: skip
    argv += ["--out", str(tmp_path / "d")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.endswith("or give a longer text (--num-texts, --seq-len)\n"), err
    assert "compare" not in err
