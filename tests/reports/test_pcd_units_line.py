"""The unit line of the ``reproduce pcd`` report: units counted once however many records they
hold, their commits, and the compute time summed only over units that recorded it."""

from __future__ import annotations

from longred_bench.reports.pcd_report import unit_cost_line


def _records(unit: str, commit: str, seconds: float | None, n: int = 3) -> list[dict]:
    prov = {"git_commit": commit, "device": "cpu"}
    return [{"unit": unit, "unit_seconds": seconds, "provenance": prov} for _ in range(n)]


def test_units_are_counted_once_per_folder_with_their_commits() -> None:
    recs = _records("pcd-a", "c1", 60.0) + _records("pcd-b", "c1", 120.0, n=5)
    recs += _records("pcd-c", "c2", None)
    line = unit_cost_line(recs)
    assert line.startswith("Units: 3, computed at commits `c1` (2), `c2` (1);")
    assert "compute recorded for 2 of them: 3.0 min" in line


def test_no_recorded_time_is_said_rather_than_summed_as_zero() -> None:
    line = unit_cost_line(_records("pcd-a", "c1", None))
    assert "not recorded" in line and "min" not in line


def test_records_without_unit_tags_still_name_their_commits() -> None:
    line = unit_cost_line([{"provenance": {"git_commit": "abc", "device": "cpu"}}])
    assert "`abc`" in line


def test_the_units_source_hashes_are_named_with_their_dirty_flags() -> None:
    recs = _records("pcd-a", "c1", 60.0) + _records("pcd-b", "c1", 60.0)
    for i, r in enumerate(recs):
        r["provenance"] = {**r["provenance"], "source_hash": "ab" * 32 if i < 3 else "cd" * 32,
                           "dirty": i >= 3}  # fmt: skip
    line = unit_cost_line(recs)
    assert "`c1` (2) (source `abababababab`, `cdcdcdcdcdcd` (dirty));" in line
