"""An ablation report's text beside the labels: the rule of a claim that a row lowers its score
says reproduced below 0 and not reproduced above it (the other way round for one that raises
it), and the table of variants leaves the default row's differences from itself empty while a
variant shows its difference with an interval."""

from __future__ import annotations

from report_helpers import tiny_run

from longred_bench.reports.ablation_report import Claim, variant_lines, verdict_direction
from longred_bench.reports.ablation_tables import TABLE4_ABLATION
from longred_bench.reports.runs import collect_runs
from longred_bench.reports.short_avg import short_categories
from longred_bench.reports.verdict_stats import RunScores

EXT = "abf:theta=4e4"


def _rows(row: str, hits: int) -> list[RunScores]:
    per = {i: 100.0 if i < hits else 0.0 for i in range(40)}
    docs = {i: 50.0 + (i % 3) for i in range(100)}
    return [RunScores(EXT, row, 0, 51.0, 2.5 * hits, short={"General": {"cloze": docs}},
                      ruler={"a": {1024: per}})]  # fmt: skip


def test_the_rule_reads_the_claimed_side() -> None:
    ref, mine = _rows("longred-c", 12), _rows("v", 4)
    lowers = Claim("T", "lowers", "v", "longred-c", "ruler", -1, "p")
    raises = Claim("T", "raises", "v", "longred-c", "short", 1, "p")
    rule = verdict_direction(lowers, ref, mine, "s").rule
    assert "RULER(v) - RULER(longred-c): entirely below 0 -> reproduced; entirely above 0" in rule
    rule = verdict_direction(raises, ref, mine, "s").rule
    assert "Avg(longred-c): entirely above 0 -> reproduced; entirely below 0" in rule


def test_the_default_row_has_no_difference_from_itself() -> None:
    records = tiny_run("original", None, 0.8)
    records += tiny_run("longred-c", EXT, 0.7, ruler=0.5)
    records += tiny_run("longred-c-no-s2l", EXT, 0.6, ruler=0.25)
    lines = variant_lines(TABLE4_ABLATION, collect_runs(records), short_categories(records))
    cells = {row[1]: row for row in ([c.strip() for c in x.strip("|").split("|")]
                                     for x in lines[2:] if x)}  # fmt: skip
    default = cells["LongReD-C"]
    assert default[4:] == ["70.0", "", "50.0", ""]
    variant = next(row for title, row in cells.items() if title != "LongReD-C")
    assert variant[4] == "60.0" and variant[5].startswith("-10.00 [")
    assert variant[6] == "25.0" and variant[7].startswith("-25.00 [")
