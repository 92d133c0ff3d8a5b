"""The checks a rebuild and a table's run make of what lies in ``--out``
(:mod:`longred_bench.reproduce.output`): whose model the records ran, the planned rows they lack,
and whose report the folder holds, each called on small records made here."""

from __future__ import annotations

from pathlib import Path

import pytest

from longred_bench.errors import UserError
from longred_bench.reproduce.output import (
    check_records_model,
    check_report_profile,
    missing_rows,
)


def _ran(**config: str) -> dict:
    return {"provenance": {"config": config}}


def test_records_of_checkpoints_trained_from_the_model_are_its_records(tmp_path: Path) -> None:
    # a training table's rows ran the checkpoints it trained, under the run cache
    trained = [_ran(model=f"/cache/runs/train-cpt-{i}/final") for i in range(2)]
    check_records_model(trained, tmp_path, "tiny", ("tiny-base",))
    check_records_model([{"row": "cpt"}], tmp_path, "tiny", ("tiny-base",))  # no model named


def test_records_of_another_model_name_it_as_ran_or_compared(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="holds records of a, b, c, not of profile tiny's"):
        check_records_model([_ran(model=m) for m in "dcba"], tmp_path, "tiny", ("tiny-base",))
    # compare's and drift's records name their model as the original
    with pytest.raises(UserError, match="holds records of other-model, not of profile tiny's"):
        check_records_model([_ran(original="other-model")], tmp_path, "tiny", ("tiny-base",))


def test_missing_rows_name_a_row_without_extension_alone() -> None:
    records = [{"row": "cpt", "extension": "pi:factor=4"}]
    planned = {("cpt", "pi:factor=4"), ("original", None), ("cpt", "pi:factor=8")}
    assert missing_rows(records, planned) == "cpt at pi:factor=8, original"
    assert missing_rows([{"task": "x"}], planned) == ""  # records without rows: nothing said


def test_a_folder_holding_this_profiles_report_or_no_text_passes(tmp_path: Path) -> None:
    (tmp_path / "table1.md").write_text("# Table 1 (profile `smol`)\n")
    check_report_profile(tmp_path, "table1", "smol")
    with pytest.raises(UserError, match="holds table1's report of profile smol"):
        check_report_profile(tmp_path, "table1", "tiny")
    (tmp_path / "table1.md").write_bytes(b"\xff\xfe not text")
    check_report_profile(tmp_path, "table1", "tiny")


def test_a_call_stopped_before_its_report_leaves_no_earlier_report_beside_its_records(
    tmp_path: Path,
) -> None:
    """A table's records are written before its report: a call stopped between the two left
    the earlier call's ``NAME.md`` beside records it was not built from."""
    from longred_bench.reproduce.output import write_outputs
    from longred_bench.results import read_records

    (tmp_path / "table9.md").write_text("an earlier call's report\n")

    def stopped(records, out, **kwargs):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_outputs("table9", stopped, [{"row": "cpt", "score": 1.0}], tmp_path,
                      profile="tiny", command="c", wall_seconds=1.0, wall_note="")  # fmt: skip
    assert not (tmp_path / "table9.md").exists()
    assert read_records(tmp_path / "table9.jsonl.gz") == [{"row": "cpt", "score": 1.0}]
