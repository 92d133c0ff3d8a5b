"""``compare.md``'s numbers beside Short Avg: retention is the extended model's score over the
original's (in the Summary and per benchmark), with no ratio where the original scored 0; the
NIAH column is the mean over the grid's cells; LongReD's Avg is shown only where both short
tasks and RULER ran; a task's score is its ``acc`` before its ``exact_match``; a comparison of
the original alone has no retention figure; and the sample-size sentence gives the range of
short-task documents and the NIAH grid's cells, not its records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from longred_bench.reports.compare_report import build_compare_report, headline_scores, sample_sizes

TASKS = ("longred_tiny_lastword", "longred_tiny_nextsent", "longred_tiny_swap",
         "longred_tiny_replace")  # fmt: skip


def _short(label: str, value: float, n: int = 40) -> list[dict[str, Any]]:
    return [{"kind": "eval", "suite": "short_tiny", "label": label, "task": t, "metric": "acc",
             "value": value, "group": "longred_short_tiny", "n_samples": n, "n_over_length": 0}
            for t in TASKS]  # fmt: skip


def _ruler(label: str, value: float) -> list[dict[str, Any]]:
    return [{"kind": "eval", "suite": "ruler", "label": label, "task": "longred_ruler",
             "metric": "score", "length": length, "value": value, "n_samples": None}
            for length in (1024, None)]  # fmt: skip


def _niah(label: str, scores: tuple[float, float]) -> list[dict[str, Any]]:
    return [{"kind": "niah", "label": label, "model": label, "length": 1024, "depth": depth,
             "score": s, "n": 5} for depth, s in zip((0, 50), scores, strict=True)]  # fmt: skip


def _summary(md: str) -> dict[str, dict[str, str]]:
    lines = md.split("## Summary", 1)[1].strip().split("\n\n", 1)[0].splitlines()
    cells = [[c.strip() for c in x.strip("|").split("|")] for x in lines]
    heads = cells[0]
    return {row[0]: dict(zip(heads, row, strict=True)) for row in cells[2:]}


def _build(records: list[dict[str, Any]], labels: list[str], out: Path) -> str:
    build_compare_report(records, labels, out, title="t", command="c")
    return (out / "compare.md").read_text()


def test_retention_is_the_extended_score_over_the_originals(tmp_path: Path) -> None:
    records = [*_short("original", 0.8), *_ruler("original", 50.0), *_niah("original", (100, 50)),
               *_short("ext", 0.6), *_ruler("ext", 40.0), *_niah("ext", (0, 50))]  # fmt: skip
    md = _build(records, ["original", "ext"], tmp_path)
    summary = _summary(md)
    assert summary["original"]["Short retention"] == summary["original"]["RULER retention"] == ""
    assert summary["ext"]["Short retention"] == "0.750"  # 60 / 80
    assert summary["ext"]["RULER retention"] == "0.800"  # 40 / 50
    assert summary["original"]["NIAH mean"] == "75.0" and summary["ext"]["NIAH mean"] == "25.0"
    assert summary["original"]["Avg (5 Short + RULER)/6"] == "75.0"  # (5 x 80 + 50) / 6
    assert "| longred_tiny_swap | Language | 80.0 | 60.0 (0.750) |" in md
    assert (tmp_path / "retention.png").is_file()


def test_no_retention_where_the_original_scored_zero(tmp_path: Path) -> None:
    md = _build([*_short("original", 0.0), *_short("ext", 0.5)], ["original", "ext"], tmp_path)
    summary = _summary(md)
    assert summary["ext"]["Short Avg"] == "50.0"
    assert summary["ext"]["Short retention"] == ""
    assert "| longred_tiny_swap | Language | 0.0 | 50.0 |" in md


def test_avg_needs_both_short_tasks_and_ruler(tmp_path: Path) -> None:
    md = _build([*_short("original", 0.8), *_short("ext", 0.6)], ["original", "ext"], tmp_path)
    assert list(_summary(md)["ext"]) == ["model", "Short Avg", "Short retention"]


def test_the_original_alone_has_no_retention_figure(tmp_path: Path) -> None:
    md = _build(_short("original", 0.8), ["original"], tmp_path)
    assert not (tmp_path / "retention.png").exists()
    assert "![retention]" not in md


def test_acc_is_the_headline_before_exact_match() -> None:
    records = [
        {"kind": "eval", "suite": "short", "task": "t", "metric": "exact_match,flex",
         "value": 0.25, "n_samples": 4},
        {"kind": "eval", "suite": "short", "task": "t", "metric": "acc,none", "value": 0.5,
         "n_samples": 4},
    ]  # fmt: skip
    assert headline_scores(records) == {"t": 50.0}


def test_sample_sizes_give_the_document_range_and_the_grids_cells() -> None:
    records = [*_short("original", 0.8, n=40), *_short("ext", 0.6, n=50),
               *_niah("original", (1, 1)), *_niah("ext", (1, 1))]  # fmt: skip
    text = sample_sizes(records)
    assert "short benchmarks 40-50 documents each" in text
    assert "NIAH 2 cells x 5 sample(s)" in text
    assert "short benchmarks 40 documents each" in sample_sizes(_short("original", 0.8, n=40))
