"""The store of built tiny-task rows (``tiny_store``): a stored file whose lines are not all
rows is built again, and a file name is read off its parts."""

from __future__ import annotations

from pathlib import Path

from longred_bench.cache import write_jsonl_file
from longred_bench.taskdata import tiny_store


def test_a_file_whose_lines_are_not_all_rows_is_built_again(tmp_path: Path, capsys) -> None:
    """A line holding a list or a number (with a manifest that matches) is not a row: the file
    is reported and built again."""
    path = tiny_store.rows_path(tmp_path, "swap", ("sotu",), 2, 1, None)
    write_jsonl_file(path, [{"context": "a"}, ["not", "a", "row"]], "tiny-task-rows")
    assert tiny_store.read_rows(path, 2) is None
    assert "making it again" in capsys.readouterr().err
    rebuilt = tiny_store.load_or_build(path, 2, lambda: [{"k": 0}, {"k": 1}])
    assert rebuilt == [{"k": 0}, {"k": 1}]
    assert tiny_store.read_rows(path, 2) == rebuilt


def test_a_file_name_joins_task_phrasing_corpora_size_seed_and_code(tmp_path, monkeypatch):
    """A file's name joins task, phrasing (if any), corpora, ``n``, seed and code hash."""
    monkeypatch.setattr(tiny_store, "generator_hash", lambda: "abc")
    path = tiny_store.rows_path(tmp_path, "lastword", ("sotu", "kjv"), 5, 3, None)
    assert path == tmp_path / "tiny_tasks" / "lastword-sotu+kjv-n5-seed3-abc.jsonl"
    path = tiny_store.rows_path(tmp_path, "passkey", ("sotu",), 5, 3, "train")
    assert path.name == "passkey-train-sotu-n5-seed3-abc.jsonl"
    assert tiny_store.rows_path(tmp_path, "ppl", ("sotu",), 5, 3, "").name == (
        "ppl-sotu-n5-seed3-abc.jsonl"
    )
