"""The store of built tiny-task rows (``longred_bench.taskdata.tiny_store``): rows built once
per cache and code, read back equal, a damaged file built again with a warning, another
source hash another file (the real-corpus path: ``test_tasks_tiny.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from longred_bench.cache import file_manifest_path
from longred_bench.errors import UserError
from longred_bench.taskdata import tiny_store, tiny_tasks

ROWS = [
    {"context": "The cat sat on the", "choices": ["mat", "sea", "sky", "day"], "gold": 0},
    {"text": "Fourscore and seven years \u2014 ago.", "doc_id": "1863", "start": 0},
]


def _counting(rows: list[dict]) -> tuple[list[int], object]:
    calls: list[int] = []

    def build() -> list[dict]:
        calls.append(1)
        return [dict(row) for row in rows]

    return calls, build


def test_rows_are_built_once_then_read_back_equal(tmp_path: Path) -> None:
    path = tiny_store.rows_path(tmp_path, "lastword", ("sotu",), 2, 1234, None)
    calls, build = _counting(ROWS)
    assert tiny_store.load_or_build(path, 2, build) == ROWS
    assert tiny_store.load_or_build(path, 2, build) == ROWS
    assert len(calls) == 1
    assert path.parent == tmp_path / "tiny_tasks" and file_manifest_path(path).is_file()
    assert path.name.startswith("lastword-sotu-n2-seed1234-")


def test_a_damaged_or_short_file_is_built_again_with_a_warning(tmp_path: Path, capsys) -> None:
    path = tiny_store.rows_path(tmp_path, "ppl", ("sotu",), 2, 1234, None)
    calls, build = _counting(ROWS)
    tiny_store.load_or_build(path, 2, build)
    path.write_text(path.read_text()[:-5])  # no longer its manifest's size and hash
    assert tiny_store.load_or_build(path, 2, build) == ROWS
    assert len(calls) == 2 and "is corrupt" in capsys.readouterr().err
    # a file of another row count (another n under the same name cannot exist; a hand edit)
    assert tiny_store.read_rows(path, 3) is None
    assert "holds 2 lines, not 3 rows" in capsys.readouterr().err


def test_names_follow_task_phrasing_corpora_size_seed_and_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def name(*args) -> str:
        return tiny_store.rows_path(tmp_path, *args).name

    base = name("passkey", ("sotu",), 10, 1, "heldout")
    assert base.startswith("passkey-heldout-sotu-n10-seed1-")
    others = {name("passkey", ("sotu",), 10, 1, "train"), name("passkey", ("sotu", "brown"), 10,
              1, "heldout"), name("passkey", ("sotu",), 11, 1, "heldout"),
              name("passkey", ("sotu",), 10, 2, "heldout")}  # fmt: skip
    assert len(others) == 4 and base not in others
    monkeypatch.setattr(tiny_store, "generator_hash", lambda: "f" * 12)
    assert name("passkey", ("sotu",), 10, 1, "heldout") == "passkey-heldout-sotu-n10-seed1-" + (
        "f" * 12 + ".jsonl"
    )


def test_a_phrasing_for_another_task_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="passkey task only"):
        tiny_tasks.build("ppl", phrasing="train", cache=tmp_path)
    assert not (tmp_path / "tiny_tasks").exists()


def test_data_verify_checks_the_stored_rows(tmp_path: Path, capsys) -> None:
    from longred_bench.cli import main

    path = tiny_store.rows_path(tmp_path, "swap", ("sotu",), 2, 1234, None)
    tiny_store.load_or_build(path, 2, _counting(ROWS)[1])
    name = path.relative_to(tmp_path).as_posix()
    assert main(["data", "verify", "--cache", str(tmp_path)]) == 0
    assert f"ok          {name}" in capsys.readouterr().out.splitlines()
    path.write_text(path.read_text().replace("cat", "dog"))
    assert main(["data", "verify", "--cache", str(tmp_path)]) == 1
    (line,) = [x for x in capsys.readouterr().out.splitlines() if name in x]
    assert line.startswith("corrupt ") and line.endswith("and run again to rebuild it")
