"""The Table 7 report from a tiny run's records: the premises (a) and (e) of the extension come
first, then LongReD-C against each continual-learning baseline (``T7m``: model merging, ``T7p``:
attention-only tuning), each with the paper's numbers of that baseline, gated on both premises
and with the non-inferiority margin scaled by CPT's RULER gain; and ``table7.md`` shows the
paper's table with its empty cells left empty."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from report_helpers import tiny_run

from longred_bench.reports.paper import TABLE7, TABLE7_SETTING
from longred_bench.reports.runs import collect_runs
from longred_bench.reports.short_avg import short_categories
from longred_bench.reports.table7_report import build_table7, table7_verdicts
from longred_bench.reports.verdict_rules import NOT_COMPARABLE

EXT = "abf:theta=4e4"


def _records(zero_shot: bool = True) -> list[dict[str, Any]]:
    recs = tiny_run("original", None, 0.8)
    if zero_shot:
        recs += tiny_run("zero-shot", EXT, 0.7, ruler=0.2)
    recs += tiny_run("cpt", EXT, 0.4, ruler=0.6)
    recs += tiny_run("longred-c", EXT, 0.75, ruler=0.6)
    recs += tiny_run("merge", EXT, 0.5, ruler=0.6)
    recs += tiny_run("attention-only", EXT, 0.45, ruler=0.6)
    return recs


def _verdicts(records: list[dict[str, Any]]):
    return table7_verdicts(collect_runs(records), short_categories(records))


def test_premises_first_then_each_baseline_with_its_paper_numbers() -> None:
    verdicts = _verdicts(_records())
    assert [v.key for v in verdicts] == ["a", "e", "T7m", "T7p"]
    merge, pet = verdicts[2], verdicts[3]
    assert "model merging" in merge.paper and "PET (attention-only tuning)" not in merge.paper
    assert "PET (attention-only tuning)" in pet.paper and "model merging" not in pet.paper
    assert merge.paper == (
        f"{TABLE7_SETTING}: LongReD-C General 67.51, Math 31.52, Common 72.35, RULER 84.98; "
        "model merging General 65.92, RULER 83.38 ([sec])."
    )
    # CPT's RULER gain over zero-shot, 60 - 20 = 40 points, scales the RULER margin
    assert "CPT's RULER gain 40.00" in merge.ours
    assert merge.label != NOT_COMPARABLE and pet.label != NOT_COMPARABLE


def test_without_the_zero_shot_row_the_baselines_are_not_comparable() -> None:
    """(a) is measured, (e) is not: a gated claim is not judged on (a) alone."""
    verdicts = _verdicts(_records(zero_shot=False))
    assert [v.key for v in verdicts] == ["a", "T7m", "T7p"]
    assert [v.label for v in verdicts[1:]] == [NOT_COMPARABLE, NOT_COMPARABLE]


def test_a_baseline_without_runs_gets_no_verdict() -> None:
    no_pet = [r for r in _records() if r["row"] != "attention-only"]
    assert [v.key for v in _verdicts(no_pet)] == ["a", "e", "T7m"]
    no_longred = [r for r in _records() if r["row"] != "longred-c"]
    assert [v.key for v in _verdicts(no_longred)] == ["a", "e"]


def test_the_paper_table_leaves_missing_numbers_empty(tmp_path: Path) -> None:
    md_path, png = build_table7(_records(), tmp_path, profile="tiny", command="c")
    md = md_path.read_text()
    assert png.read_bytes()[:4] == b"\x89PNG"
    for name, values in TABLE7.items():
        cells = " | ".join("" if v is None else f"{v:.2f}" for v in values)
        assert f"| {name} | {cells} |" in md
    assert md.index("(a) ") < md.index("(T7m)") < md.index("(T7p)")


def test_the_report_names_its_base_model(tmp_path: Path) -> None:
    """The model every row starts from, the profile's, is named in the report's header, as
    Table 3's is (Tables 2, 4-7, 10, LinearARD, LongRecipe and Figure 3 named none: a report of
    one's own model did not say which); a zoo model with its weights' source."""
    from longred_bench.reports.run_sections import base_model_lines

    md = build_table7(_records(), tmp_path, profile="mine", command="c")[0].read_text()
    assert "\n- Base model: `tiny-base`.\n- Command: `c`" in md
    records = [{**r, "model": "/data/my-llama"} if r["row"] == "original" else r
               for r in _records()]  # fmt: skip
    assert base_model_lines(records) == ["- Base model: `/data/my-llama`."]
    assert base_model_lines([r for r in records if r["row"] != "original"]) == []
