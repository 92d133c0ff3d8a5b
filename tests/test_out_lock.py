"""Two runs into one ``--out`` at once: the second stops in one line (it wrote over the first's
results, or failed in a traceback on the response cache the first had removed)."""

from __future__ import annotations

import argparse

import pytest

from longred_bench.cli import main
from longred_bench.cli.out_lock import out_lock
from longred_bench.errors import UserError


def test_a_second_run_into_a_busy_out_is_refused(tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "o"
    args = argparse.Namespace(command="eval", out=str(out), dry_run=False)
    with out_lock(args):
        busy = rf"--out {out} is in use by another run"
        with pytest.raises(UserError, match=busy), out_lock(args):
            pass
        argv = ["eval", "--model", "tiny-random", "--suite", "short_tiny", "--limit", "1",
                "--out", str(out)]  # fmt: skip
        assert main(argv) == 2
        assert (
            capsys.readouterr()
            .err.strip()
            .endswith(
                "is in use by another run (still running?): wait for it to end, or give "
                "another --out"
            )
        )
        # a dry run, another folder and a command that writes no --out run as before
        assert main([*argv, "--dry-run"]) == 0  # into the busy folder
        with out_lock(argparse.Namespace(command="eval", out=str(tmp_path / "p"))):
            pass
        with out_lock(argparse.Namespace(command="models", out=str(out))):
            pass
        monkeypatch.setenv("RANK", "1")  # torchrun's other processes of the same run
        with out_lock(args):
            pass
        monkeypatch.setenv("RANK", "0")
        with pytest.raises(UserError, match=busy), out_lock(args):
            pass
    with out_lock(args):  # released
        assert (tmp_path / ".o.lock").is_file()
    assert not out.exists()  # the lock lies beside the folder; nothing made the folder
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # and it is gone with the run


def test_one_folder_named_two_ways_is_one_lock(tmp_path, monkeypatch) -> None:
    """`--out .` inside the folder and its absolute path locked two files, so two runs wrote
    into one folder."""
    out = tmp_path / "run"
    out.mkdir()
    monkeypatch.chdir(out)
    with out_lock(argparse.Namespace(command="train", out=".")):
        for other in (str(out), "../run", str(tmp_path / "link")):
            if other.endswith("link"):
                (tmp_path / "link").symlink_to(out)
            again = argparse.Namespace(command="eval", out=other)
            with pytest.raises(UserError, match="is in use by another run"), out_lock(again):
                pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "run"]
