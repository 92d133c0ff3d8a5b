"""What the command-line tests share: the check that a command failed in one line."""

from __future__ import annotations

from longred_bench.cli import main


def one_line_error(capsys, argv: list[str], message: str) -> str:
    """The one-line error of ``argv`` (exit 2), which holds ``message``."""
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err, err
    assert len(err.splitlines()) == 1
    return err
