"""``reproduce table10 --profile smoke``: the cost table of CPT, mixed-data CPT and LongReD-C from
their own training timings, the paper's hours beside, and the two cost verdicts; the tiny
profile's rows are Table 3's runs."""

from __future__ import annotations

import pytest

from longred_bench.cli import main
from longred_bench.reports.verdict_rules import LABEL_RULE
from longred_bench.results import read_records


@pytest.mark.integration
def test_reproduce_table10_smoke(tmp_path, smoke_cache):
    out = tmp_path / "report"
    argv = ["reproduce", "table10", "--profile", "smoke", "--out", str(out), "--quiet"]
    assert main(argv) == 0  # in this process (Table 3's test runs these unit kinds in two)
    records = read_records(out / "table10.jsonl.gz")
    trained = {r["row"] for r in records if r["train"]}
    assert trained == {"cpt", "mix-cpt", "longred-c"}
    md = (out / "table10.md").read_text()
    assert md.count(LABEL_RULE) == 1  # the label rule once, above the evidence
    assert "| 32K | 22.4 h | 19.9 h | 22.4 h | 0.89 | 1.00 |" in md  # the paper beside ours
    assert "| `abf:theta=1e5` | CPT, long data | 1 |" in md
    assert "MiB (process RSS) |" in md  # each run's own peak (Linux CPU)
    assert "| (T10a) LongReD costs no more" in md and "| (T10b) CPT on mixed data" in md
    assert (out / "table10.png").read_bytes()[:4] == b"\x89PNG"


def test_tiny_table10_reads_table3_runs():
    from profile_helpers import grid_of

    from longred_bench.reproduce.grid import trained_rows

    prof, table3 = grid_of("table10"), grid_of("table3")
    runs = trained_rows(prof)
    assert len(runs) == 4 * 3 * 2  # four rows, three seeds, two extensions
    assert all(run in trained_rows(table3) and run.config(prof) == run.config(table3)
               for run in runs)  # fmt: skip
