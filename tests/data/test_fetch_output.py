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


@pytest.mark.parametrize("order", [["kjv", "brown"], ["brown", "kjv"]])
def test_a_source_that_fails_leaves_the_others_fetched_and_listed(
    brown_dir: Path, cache: Path, capsys: pytest.CaptureFixture[str], order: list[str]
) -> None:
    """kjv's archives are not in the mirror: the fetch stopped at it (brown, after it, was
    never tried) and printed no line for brown when it came first; every source is tried now,
    each has its line, and the command ends with kjv's error."""
    from longred_bench.errors import UserError

    argv = ["data", "fetch", "--sources", *order, "--from", str(brown_dir), "--cache", str(cache)]
    args = build_parser().parse_args(argv)
    with pytest.raises(UserError, match=r"does not hold bible-kjv-text_4\.38_all\.deb"):
        args.func(args)
    lines = dict(line.split("\t")[:2] for line in capsys.readouterr().out.splitlines())
    assert lines == {"kjv": "failed", "brown": "fetched"}
    assert (cache / "corpora" / "brown").is_dir()
