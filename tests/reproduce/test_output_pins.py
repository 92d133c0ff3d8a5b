"""What a table's call leaves in ``--out`` and what a rebuild refuses
(:mod:`longred_bench.reproduce.output`): the paths ``write_outputs`` returns, a records file
that holds no records, records that name no model or only checkpoints the table trained, the
planned rows a rebuild names, and the first line of a report the folder check reads."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from longred_bench.errors import UserError
from longred_bench.reproduce.output import (
    check_records_model,
    check_report_profile,
    rebuild_outputs,
    table_records,
    write_outputs,
)


def _ran(**config: str) -> dict:
    return {"provenance": {"config": config}}


def _report(records, out, **kwargs) -> list[Path]:
    """A report builder writing one file, the builder's protocol's keywords in it."""
    path = out / "fake.md"
    path.write_text(f"# fake (profile `{kwargs['profile']}`)\n{kwargs['wall_note']}\n")
    return [path]


def test_write_outputs_returns_the_report_then_the_records_file(tmp_path: Path) -> None:
    """The paths written: the builder's, then ``NAME.jsonl.gz`` (which the CLI lists)."""
    out = tmp_path / "new" / "folder"
    paths = write_outputs("fake", _report, [{"row": "a"}], out, profile="tiny", command="c",
                          wall_seconds=1.0, wall_note="n")  # fmt: skip
    assert paths == [out / "fake.md", out / "fake.jsonl.gz"]
    assert all(p.is_file() for p in paths)


def test_a_records_file_that_holds_none_is_refused_in_one_line(tmp_path: Path) -> None:
    """An empty (but whole) records file is no table to rebuild: one line saying so."""
    path = tmp_path / "table2.jsonl.gz"
    path.write_bytes(gzip.compress(b"\n"))
    with pytest.raises(UserError, match=r"holds no records: run the table again without"):
        table_records(path, "table2")


def test_records_are_not_checked_against_a_profile_that_names_no_model(tmp_path: Path) -> None:
    """No model names to compare with (``models`` empty): any records pass."""
    check_records_model([_ran(model="other-model")], tmp_path, "tiny", ())


def test_a_plan_that_cannot_be_made_here_gives_no_planned_rows() -> None:
    """A table refused at the profile (an unknown row) loses the rebuild's note, not the
    rebuild: no planned rows, no error."""
    import dataclasses

    from longred_bench.profiles import load_profile
    from longred_bench.reproduce.output import planned_rows

    prof = load_profile("smoke")
    bad = dataclasses.replace(prof, tables={**prof.tables, "table3": {"rows": ["nope"]}})
    assert planned_rows("table3", bad, {}) == set()
    assert ("cpt", "abf:theta=1e5") in planned_rows("table3", prof, {})


def test_only_the_reports_first_line_names_its_profile(tmp_path: Path) -> None:
    """A file whose title names no profile is no other profile's report, whatever a later line
    quotes (a profile named in its text)."""
    (tmp_path / "table1.md").write_text("# my notes\nas run at (profile `smol`)\n")
    check_report_profile(tmp_path, "table1", "tiny")


def test_a_rebuilds_call_line_names_the_commit_and_source_that_rebuilt_it(
    tmp_path: Path, monkeypatch
) -> None:
    """The note says the report was rebuilt computing nothing, by which commit (or installed
    version) and source hash; records and report stay side by side."""
    import longred_bench.source_tree as source_tree
    from longred_bench.results import write_table_records

    write_table_records(tmp_path, "fake", [{"row": "a"}])
    notes: list[str] = []

    def build(records, out, **kwargs):
        notes.append(kwargs["wall_note"])
        return []

    for state in (source_tree.SourceState("abc123", "f" * 64, False),
                  source_tree.SourceState(None, "e" * 64, None)):  # fmt: skip
        monkeypatch.setattr(source_tree, "source_state", lambda state=state: state)
        rebuild_outputs("fake", build, tmp_path, profile="tiny", command="c")
    assert notes[0] == (
        "report rebuilt from the records in `fake.jsonl.gz`, computing nothing, by commit "
        f"abc123 (source `{'f' * 12}`); the records name the code that computed them"
    )
    assert notes[1].startswith("report rebuilt from the records in `fake.jsonl.gz`, computing "
                               "nothing, by longred-bench ")  # fmt: skip
    assert notes[1].endswith(f", not a git checkout (source `{'e' * 12}`); the records name "
                             "the code that computed them")  # fmt: skip


def test_records_naming_a_model_by_no_string_are_no_other_models(tmp_path: Path) -> None:
    """Only string model names count as what the records ran."""
    check_records_model([_ran(model=["a", "b"]), _ran(original=None)], tmp_path, "tiny", ("m",))


def test_only_a_title_of_the_profile_form_names_another_profiles_report(tmp_path: Path) -> None:
    """The report title's ``(profile `NAME`)``, not a profile quoted otherwise, names it."""
    (tmp_path / "table1.md").write_text("# Table 1 as the profile `smol` wrote it\n")
    check_report_profile(tmp_path, "table1", "tiny")


def test_the_earlier_report_is_gone_even_where_the_records_cannot_be_written(
    tmp_path: Path,
) -> None:
    """The earlier ``NAME.md`` is removed before the records are written: a call whose
    records fail leaves no report of other records."""
    (tmp_path / "table9.md").write_text("an earlier call's report\n")
    with pytest.raises(TypeError):
        write_outputs("table9", _report, [{"row": object()}], tmp_path, profile="tiny",
                      command="c", wall_seconds=1.0, wall_note="")  # fmt: skip
    assert not (tmp_path / "table9.md").exists()


def test_a_rebuilds_wall_time_is_its_own(tmp_path: Path, monkeypatch) -> None:
    """The rebuilt report's wall time is the time the rebuild took, from its start."""
    import time

    import longred_bench.source_tree as source_tree
    from longred_bench.results import write_table_records

    write_table_records(tmp_path, "fake", [{"row": "a"}])
    state = source_tree.SourceState("abc123", "f" * 64, False)
    monkeypatch.setattr(source_tree, "source_state", lambda: state)
    clock = iter([100.0, 102.5])
    monkeypatch.setattr(time, "perf_counter", lambda: next(clock))
    got: dict = {}
    rebuild_outputs("fake", lambda r, o, **k: got.update(k) or [], tmp_path, profile="tiny",
                    command="c")  # fmt: skip
    assert got["wall_seconds"] == 2.5
