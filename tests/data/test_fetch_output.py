"""What ``data fetch`` prints: each source once at a terminal (stderr), and the tab-separated
lines scripts read where standard output is a pipe or a file."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from longred_bench.cli import build_parser


def _fetch(brown_dir: Path, cache: Path) -> None:
    argv = ["data", "fetch", "--sources", "brown", "--from", str(brown_dir), "--cache", str(cache)]
    args = build_parser().parse_args(argv)
    assert args.func(args) == 0


def test_at_a_terminal_each_source_is_reported_once(
    brown_dir: Path, cache: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    """Each source was reported on stderr and again, as a tab-separated line, on stdout."""
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    _fetch(brown_dir, cache)
    out, err = capsys.readouterr()
    assert out == "" and "brown: fetched (" in err and str(cache / "corpora/brown") in err


def test_into_a_pipe_each_source_is_a_tab_separated_line(
    brown_dir: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fetch(brown_dir, cache)
    assert capsys.readouterr().out == f"brown\tfetched\t{cache / 'corpora/brown'}\n"
