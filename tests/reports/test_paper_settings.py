"""Whose claim a verdict checks, as each report's summary table says: the paper's at a setting
the paper ran, the paper's claim at a setting it did not run (LongReD's tables are ABF by 4, its
Table 3 also ABF by 16 and PI by 4; `tiny` runs PI x2 too), or this suite's own check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_table1_intervals import summary, with_layers
from test_table3_report import EXT, TRAIN, records_for, run_records

from longred_bench.reports.runs import collect_runs
from longred_bench.reports.short_avg import short_categories
from longred_bench.reports.table1 import build_table1
from longred_bench.reports.table2_report import table2_verdicts
from longred_bench.reports.table3 import table3_verdicts
from longred_bench.reports.verdict_rules import (
    REPRODUCED,
    SOURCES,
    Verdict,
    at_paper_setting,
    verdicts_markdown,
)
from longred_bench.reports.verdicts import longred_ran, table3_ran

ELSEWHERE = "paper's claim, at a setting it did not run"


def _at(records: list[dict[str, Any]], ext: str, window: int) -> list[dict[str, Any]]:
    """``records`` with the extension ``EXT`` (window 1,024) moved to ``ext`` at ``window``."""
    out = []
    for r in records:
        if r.get("extension") == EXT:
            r = {**r, "extension": ext, "rope": ext}
            r |= {"max_position_embeddings": window} if "max_position_embeddings" in r else {}
        out.append(r)
    return out


def _sources(records: list[dict[str, Any]], verdicts: Any = table3_verdicts) -> dict[str, str]:
    runs = collect_runs(records)
    return {v.key: v.source for v in verdicts(runs, short_categories(records))}


def test_a_verdict_names_one_of_the_known_sources() -> None:
    with pytest.raises(ValueError, match="verdict source 'theirs'"):
        Verdict("x", "c", "s", "p", "o", REPRODUCED, "r", source="theirs")
    assert set(SOURCES) == {"paper", "elsewhere", "ours"}


def test_only_the_papers_claims_are_marked_at_a_setting_it_did_not_run() -> None:
    paper = Verdict("a", "c", "s", "p", "o", REPRODUCED, "r")
    ours = Verdict("e", "c", "s", "p", "o", REPRODUCED, "r", source="ours")
    assert [at_paper_setting(v, ran=True) for v in (paper, ours)] == [paper, ours]
    moved = [at_paper_setting(v, ran=False) for v in (paper, ours)]
    assert [v.source for v in moved] == ["elsewhere", "ours"]
    assert moved[0].label == paper.label and moved[0].ours == paper.ours
    lines = verdicts_markdown(moved)
    assert lines[2] == f"| (a) c | s | **reproduced** | {ELSEWHERE} |"
    assert lines[3] == "| (e) c | s | **reproduced** | ours (not in the paper) |"


def test_the_settings_the_paper_ran() -> None:
    assert table3_ran("ABF", 4.0) and table3_ran("PI", 4.0) and table3_ran("ABF", 16.0)
    assert not table3_ran("PI", 2.0) and not table3_ran("YARN", 4.0)
    assert table3_ran("PI", 4.0, "LongReD-U", "Mix") and not table3_ran(
        "PI", 2.0, "LongReD-U", "Mix"
    )
    assert longred_ran("ABF", 4.0)
    assert not longred_ran("PI", 4.0) and not longred_ran("ABF", 2.0) and not longred_ran("PI", 2.0)


def test_table3_at_the_papers_setting_and_beyond_it() -> None:
    """ABF x4 is a Table 3 setting: (a) and (b) are the paper's; at PI x2, which no Table 3 row
    has, they are its claims at a setting it did not run; (d) and (e) are ours at both."""
    recs = records_for(control=(0.55, 0.6, 0.75))
    assert _sources(recs) == {"a": "paper", "e": "ours", "b": "paper", "d": "ours"}
    assert _sources(_at(recs, "pi:factor=2", 512)) == {
        "a": "elsewhere", "e": "ours", "b": "elsewhere", "d": "ours",
    }  # fmt: skip
    # PI x4 has a Table 3 row of CPT and LongReD-C.
    assert _sources(_at(recs, "pi:factor=4", 1024))["b"] == "paper"


def test_table2_is_the_papers_only_at_abf_by_four() -> None:
    recs = records_for() + run_records("long-short-cpt", EXT, short=(0.5, 0.5, 0.7), ruler=0.5,
                                       train=TRAIN)  # fmt: skip
    assert _sources(recs, table2_verdicts)["T2"] == "paper"
    at_pi = _sources(_at(recs, "pi:factor=4", 1024), table2_verdicts)
    assert at_pi["T2"] == "elsewhere" and at_pi["a"] == "paper"  # (a): Table 3 has PI x4


def test_table1_drift_falls_is_the_papers_at_abf_only(tmp_path: Path) -> None:
    """The paper's Table 1 rows are all ABF: claim (c) at PI is its claim elsewhere."""
    records = []
    for ext in ("abf:theta=4e4", "pi:factor=4"):
        hidden, kl = [0.9, 0.91, 0.92, 0.93], [0.3, 0.31, 0.32, 0.33]
        after = summary([h + 0.03 for h in hidden], [k - 0.1 for k in kl], extension=ext,
                        stage="after", trained_row="cpt")  # fmt: skip
        records += with_layers(summary(hidden, kl, extension=ext)) + with_layers(after)
    control = summary([0.99] * 4, [0.01] * 4, stage="control", trained_row="control",
                      extension=None)  # fmt: skip
    md = build_table1(records + with_layers(control), tmp_path, profile="p", command="c")[0]
    rows = [x for x in md.read_text().splitlines() if x.startswith("| (c) Drift falls")]
    assert len(rows) == 2
    assert rows[0].endswith("| `abf:theta=4e4` | **reproduced** | paper |")
    assert rows[1].endswith(f"| `pi:factor=4` | **reproduced** | {ELSEWHERE} |")
