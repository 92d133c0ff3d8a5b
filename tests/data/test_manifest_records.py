"""A fetched source whose manifest records no files is damaged wherever it is looked at: ``data
list``, ``data verify`` (exit 1), a run that reads it, and a plain ``data fetch`` (which
replaces it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from longred_bench.cli import build_parser
from longred_bench.data import corpora
from longred_bench.data import fetch as fetch_module
from longred_bench.errors import UserError


@pytest.fixture
def recordless(brown_dir: Path, cache: Path) -> Path:
    """A fetched Brown entry whose manifest was replaced by a JSON object without file records."""
    fetch_module.fetch(["brown"], brown_dir, cache=cache)
    (cache / "corpora/brown/manifest.json").write_text('{"x": 1}')
    return cache


def _run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


def test_verify_fails_on_it_as_list_calls_it_damaged(recordless: Path, capsys) -> None:
    assert _run(["data", "list", "--cache", str(recordless)]) == 0
    assert "    damaged: manifest.json unreadable or incomplete" in capsys.readouterr().out
    assert _run(["data", "verify", "--cache", str(recordless), "--sources", "brown"]) == 1
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith("corrupt     brown: manifest.json records no files; run `longred-bench")


def test_a_run_refuses_to_read_it(recordless: Path) -> None:
    with pytest.raises(UserError, match=r"is corrupt: manifest.json records no files; run "):
        corpora.load_documents("brown", cache=recordless)


def test_a_plain_fetch_replaces_it(recordless: Path, brown_dir: Path) -> None:
    (record,) = fetch_module.fetch(["brown"], brown_dir, cache=recordless)
    assert record.status == "replaced"
    assert corpora.load_documents("brown", cache=recordless)
