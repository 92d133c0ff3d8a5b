"""A psa stopped after its records and before its report: the interrupt line says the records
are kept, and the same command writes the report from them without measuring again (as it
does for a finished psa)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from data_helpers import ensure_cached

from longred_bench.cli import main
from longred_bench.cli.interrupt import interrupted_line


def _argv(out: Path) -> list[str]:
    return ["psa", "--model", "tiny-random", "--tasks", "niah_single_1", "--lengths", "512",
            "--samples", "1", "--out", str(out), "--quiet"]  # fmt: skip


def _measures_nothing(monkeypatch) -> None:
    from longred_bench.jobs import psa

    def measured(*args, **kwargs):
        raise AssertionError("psa measured again")

    monkeypatch.setattr(psa, "run_psa", measured)


def test_psa_stopped_before_its_report_writes_it_from_the_records(
    tmp_path, capsys, monkeypatch, request
):
    """A psa stopped while writing psa.md or psa.png said "nothing saved", and the rerun measured
    every sample again (on a real model, hours); an earlier run's report beside the new records
    was left as if it were theirs."""
    ensure_cached(request, "brown")
    out = tmp_path / "psa"
    assert main(_argv(out)) == 0  # an earlier run's records and report
    first_md = (out / "psa.md").read_text()
    (out / "psa.jsonl").unlink()  # to measure it again, as the docs say
    capsys.readouterr()
    from longred_bench.reports import psa_report

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:  # measured again, stopped after its records
        patch.setattr(psa_report, "write_psa_report", stopped)
        assert main(_argv(out)) == 130
    records = (out / "psa.jsonl").read_bytes()
    assert not (out / "psa.md").exists() and not (out / "psa.png").exists()  # not the old ones
    err = capsys.readouterr().err
    assert f"interrupted: the records are saved in {out / 'psa.jsonl'}, the report" in err
    assert "measuring nothing again: longred-bench psa --model tiny-random" in err
    _measures_nothing(monkeypatch)
    assert main(_argv(out)) == 0
    said = capsys.readouterr().out
    assert said.startswith(f"{out} holds this psa, measured: nothing to measure")
    assert "psa.md" in said and "psa.png" in said
    assert (out / "psa.jsonl").read_bytes() == records
    md = (out / "psa.md").read_text()
    assert md.splitlines()[0] == first_md.splitlines()[0]  # the same title
    prov = json.loads(records.splitlines()[0])["provenance"]
    assert f"Device: {prov['device']}; commit `{prov['git_commit']}`" in md
    assert f"measured {prov['timestamp']}." in md and "| tiny-random | 512 | 1 |" in md
    assert (out / "psa.png").read_bytes()[:4] == b"\x89PNG"
    (out / "psa.png").unlink()  # one of the two missing
    assert main(_argv(out)) == 0
    assert (out / "psa.png").read_bytes()[:4] == b"\x89PNG" and (out / "psa.md").read_text() == md


def test_a_finished_psa_measures_nothing_again(tmp_path, capsys, monkeypatch, request):
    """A finished psa's folder (records and report), given the same command, measured every
    sample again (on a real model, minutes to hours): its report is written again from the
    records (at the ``--top-k`` given), and its records stay as they are."""
    ensure_cached(request, "brown")
    out = tmp_path / "psa"
    assert main(_argv(out)) == 0
    records = (out / "psa.jsonl").read_bytes()
    capsys.readouterr()
    _measures_nothing(monkeypatch)
    assert main([*_argv(out), "--top-k", "1"]) == 0
    said = capsys.readouterr().out
    assert said.startswith(f"{out} holds this psa, measured: nothing to measure (delete psa.jsonl")
    assert (out / "psa.jsonl").read_bytes() == records
    assert "top-1 share" in (out / "psa.md").read_text()


def _psa_args(out: Path) -> argparse.Namespace:
    return argparse.Namespace(command="psa", out=str(out), argv=_argv(out))


def test_psa_interrupt_line_says_what_is_kept(tmp_path) -> None:
    out = tmp_path / "psa"
    line = interrupted_line(_psa_args(out))
    assert line.startswith(
        "interrupted: psa keeps its measurements in memory until the end: "
        "nothing of this call saved; run it again: longred-bench psa"
    )
    out.mkdir()
    for name in ("psa.jsonl", "psa.md", "psa.png"):  # an earlier run's, finished
        (out / name).write_text("x\n")
    line = interrupted_line(_psa_args(out))
    assert "nothing of this call saved (an earlier run's results there are kept" in line
    (out / "psa.md").unlink()
    assert "the records are saved in" in interrupted_line(_psa_args(out))
    (out / "psa.jsonl").write_text("")  # nothing in it: no records to write a report from
    assert "nothing of this call saved" in interrupted_line(_psa_args(out))
