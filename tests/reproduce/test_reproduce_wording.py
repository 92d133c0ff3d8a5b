"""Counts in reproduce's lines agree with their nouns: ``1 unit``, ``1 process``, ``2 units``."""

from __future__ import annotations

from longred_bench.cli import main
from longred_bench.reproduce.plan import PlannedUnit
from longred_bench.reproduce.pool import Unit, counted, run_units_parallel


def test_counted_nouns() -> None:
    assert [counted(1, "unit"), counted(2, "unit"), counted(1, "process")] == [
        "1 unit", "2 units", "1 process"]  # fmt: skip
    assert [counted(0, "process"), counted(3, "distinct unit")] == [
        "0 processes", "3 distinct units"]  # fmt: skip


def test_a_plan_of_one_unit_says_unit(tmp_path, monkeypatch, capsys) -> None:
    import longred_bench.reproduce.plan as plan

    one = [PlannedUnit("m", "train merge a", "train", False, None, "merge")]
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(plan, "planned_units", lambda ctx: one)
    assert main(["reproduce", "table2", "--profile", "smoke", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "table2: 1 unit, 0 cached, 1 to run" in out and "In all: 1 distinct unit, " in out


def test_a_pool_of_one_unit_in_one_process_says_so(capsys) -> None:
    assert run_units_parallel([Unit(print, ("hi",), "u", key="u")], 1, name="t") == ["u"]
    assert "[t] 1 unit in 1 process, " in capsys.readouterr().out


def test_a_reports_wall_time_under_a_minute_is_in_seconds() -> None:
    """An all-cached report said "wall time 0 min 00 s" for a 5.7-second call."""
    from longred_bench.reports import duration

    said = [duration(s) for s in (None, 5.7, 59.4, 59.6, 123, 3725)]
    assert said == ["not recorded", "5.7 s", "59.4 s", "1 min 00 s", "2 min 03 s",
                    "1 h 02 min 05 s"]  # fmt: skip


def test_one_sample_or_document_is_said_in_the_singular() -> None:
    """ "RULER 1 samples per task and length"."""
    from types import SimpleNamespace

    from longred_bench.reports.run_sections import sample_sizes

    one = {"r": SimpleNamespace(short_n={"t": 1}, ruler_items={"x": {1024: [0]}})}
    two = {"r": SimpleNamespace(short_n={"t": 2}, ruler_items={"x": {1024: [0, 1]}})}
    assert "short tasks 1 document each; RULER 1 sample per task and length" in sample_sizes(
        one, []
    )
    assert "short tasks 2 documents each; RULER 2 samples per task" in sample_sizes(two, [])


def test_a_rebuild_outside_a_checkout_reads_as_a_sentence(tmp_path, monkeypatch) -> None:
    """It read "by commit no git checkout (longred-bench 0.1.0)"."""
    import shutil
    from pathlib import Path

    from longred_bench import source_tree
    from longred_bench.source_tree import SourceState

    records = Path(__file__).resolve().parents[2] / "reports/smol/fig2.jsonl.gz"
    shutil.copy(records, tmp_path)
    installed = SourceState(None, "ab" * 20, None)
    monkeypatch.setattr(source_tree, "source_state", lambda: installed)
    assert (
        main(["reproduce", "fig2", "--profile", "smol", "--rebuild", "--out", str(tmp_path)]) == 0
    )
    text = (tmp_path / "fig2.md").read_text()
    assert "by longred-bench 0.1.0, not a git checkout (source `abababababab`)" in text
    assert "by commit no git checkout" not in text
