"""Measurement windows carry no special tokens and never fall short silently; decoders keep
their documented order and paragraphs; the sentence rules at an opening digit, a leading dash
and an abbreviation after a quote; and the ``paper_short`` members' selections and metrics."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
from data_helpers import _add_bytes

from longred_bench.data import decode_prose
from longred_bench.data.corpora import read_documents
from longred_bench.data.sentences import split_sentences
from longred_bench.data.texts import token_windows
from longred_bench.errors import UserError
from longred_bench.evaluation import paper_suite
from longred_bench.models.zoo import byte_tokenizer


class _BosTokenizer:
    """A byte tokenizer that adds a BOS token (id 1) unless told not to."""

    def __init__(self) -> None:
        self.inner = byte_tokenizer()

    def __len__(self) -> int:
        return len(self.inner)

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict[str, Any]:
        ids = self.inner(text, add_special_tokens=False)["input_ids"]
        return {"input_ids": ([1] if add_special_tokens else []) + ids}


def test_windows_are_running_text_without_special_tokens(tmp_path: Path) -> None:
    source = tmp_path / "t.txt"
    source.write_text("a" * 64, encoding="utf-8")
    windows = token_windows(_BosTokenizer(), str(source), num_texts=2, seq_len=32)
    assert 1 not in windows.flatten().tolist()


def test_too_little_text_or_a_one_token_window_is_an_error(tmp_path: Path) -> None:
    source = tmp_path / "t.txt"
    source.write_text("a" * 95, encoding="utf-8")  # two whole windows of 32, not three
    assert token_windows(byte_tokenizer(), str(source), 2, 32).shape == (2, 32)
    with pytest.raises(UserError, match="yields only 2 windows of 32 tokens, 3 were asked"):
        token_windows(byte_tokenizer(), str(source), 3, 32)
    with pytest.raises(UserError, match="seq_len >= 2"):
        token_windows(byte_tokenizer(), str(source), 1, 1)


def test_a_line_with_one_non_headline_tag_runs_into_its_paragraph() -> None:
    raw = "\n\n\tMerger/nn-hl proposed/vbn \nIt/pps failed/vbd ./.\n"
    assert decode_prose.brown_text(raw) == "Merger proposed It failed."


def test_hard_wrapped_lines_are_one_paragraph_without_a_closing_blank_line() -> None:
    assert decode_prose.paragraphs_from_lines(["one", "two", "", "three"]) == "one two\n\nthree"


def _tgz(path: Path, members: list[tuple[str, bytes]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members:
            _add_bytes(tar, name, data)
    return path


def test_brown_files_become_documents_in_file_name_order(tmp_path: Path) -> None:
    tgz = _tgz(tmp_path / "b.tgz", [("package/cb02", b"Later/rb ./.\n"),
                                    ("package/ca01", b"First/rb ./.\n")])  # fmt: skip
    decode_prose.decode_brown({"b": tgz}, tmp_path / "work", tmp_path)
    docs = read_documents(tmp_path / "documents.jsonl", "brown")
    assert [d.doc_id for d in docs] == ["ca01", "cb02"]


def test_addresses_become_documents_in_year_order(tmp_path: Path) -> None:
    members = []
    for stem, name in (("1950_harry_s_truman_d", "Harry S Truman"),
                       ("1790_george_washington_n", "George Washington")):  # fmt: skip
        members.append((f"package/data/{stem}.txt", b"An address."))
        record = {"name": name, "party": "P", "text": "An address."}
        members.append((f"package/data/{stem}.json", json.dumps(record).encode()))
    tgz = _tgz(tmp_path / "s.tgz", members)
    decode_prose.decode_sotu({"s": tgz}, tmp_path / "work", tmp_path)
    docs = read_documents(tmp_path / "documents.jsonl", "sotu")
    assert [d.doc_id for d in docs] == ["1790_george_washington", "1950_harry_s_truman"]


def _texts(text: str) -> list[tuple[str, bool]]:
    return [(text[s.start : s.end], s.usable) for s in split_sentences(text)]


def test_a_sentence_ends_before_a_number() -> None:
    assert _texts("Prices rose again. 1961 was a hard year.") == [
        ("Prices rose again.", True), ("1961 was a hard year.", False)]  # fmt: skip


def test_a_sentence_opening_with_a_dash_is_not_usable() -> None:
    assert _texts("-- And then he left the room.") == [("-- And then he left the room.", False)]


def test_an_abbreviation_after_an_opening_quote_ends_no_sentence() -> None:
    text = 'He said "Mr. Smith came home." Then he left.'
    assert _texts(text) == [('He said "Mr. Smith came home."', True), ("Then he left.", True)]


def test_a_selection_runs_offline_only_when_every_task_is_an_offline_one() -> None:
    assert paper_suite.runs_offline(["longred_piqa", "longred_boolq"])
    assert not paper_suite.runs_offline(["piqa", "longred_piqa"])
    assert not paper_suite.runs_offline(None)


def test_hellaswag_and_arc_challenge_read_length_normalised_accuracy() -> None:
    heads = {t: paper_suite.record_fields(t)["headline"]
             for t in ("hellaswag", "arc_challenge", "arc_easy", "longred_hellaswag")}  # fmt: skip
    assert heads == {"hellaswag": "acc_norm", "arc_challenge": "acc_norm", "arc_easy": "acc",
                     "longred_hellaswag": "acc_norm"}  # fmt: skip


def test_short_avg_categories_leave_out_a_category_with_no_member_run() -> None:
    assert paper_suite.categories(["piqa", "boolq"]) == {"RC": ("boolq",), "Common": ("piqa",)}


def test_kjv_chapters_are_in_chapter_order_whatever_the_line_order() -> None:
    books = decode_prose.kjv_books(["Ge2:1 Two.", "Ge1:1 One.", "Ge1:2 More."])
    assert books == {"Ge": [["One.", "More."], ["Two."]]}


def test_a_line_of_spaces_separates_paragraphs() -> None:
    sentences = split_sentences("It was late. \n  \t\nThe end came.")
    assert [s.paragraph for s in sentences] == [0, 1]
