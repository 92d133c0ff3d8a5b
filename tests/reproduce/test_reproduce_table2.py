"""``reproduce table2 --profile smoke``: long-only and long+short CPT trained on the same steps and
tokens, the long+short row reading half its tokens at the original window, the report with the
paper's Table 2 beside ours and the verdict; the tiny profile's long-only runs shared with
Table 3."""

from __future__ import annotations

import pytest

from longred_bench.cli import main
from longred_bench.results import read_records


@pytest.mark.integration
def test_reproduce_table2_smoke(tmp_path, smoke_cache, capsys):
    out = tmp_path / "report"
    argv = ["reproduce", "table2", "--profile", "smoke", "--out", str(out), "--quiet"]
    assert main(argv) == 0  # in this process (Table 3's test runs these unit kinds in two)
    records = read_records(out / "table2.jsonl.gz")
    ext = "abf:theta=1e5"
    rows = {(r["row"], r["extension"]) for r in records}
    assert rows == {("original", None), ("zero-shot", ext), ("cpt", ext),
                    ("long-short-cpt", ext)}  # fmt: skip
    trained = {r["row"]: r["train"] for r in records if r["train"]}
    assert trained["cpt"]["steps"] == trained["long-short-cpt"]["steps"]
    md = (out / "table2.md").read_text()
    assert "| MMLU | 62.00 | 62.50 | +0.50 |" in md  # the paper's numbers beside ours
    assert "**Short Avg**" in md and "| (T2) Replacing half of the long data" in md
    assert (out / "table2.png").read_bytes()[:4] == b"\x89PNG"
    # Its plan now finds every unit in the run cache.
    assert main(["reproduce", "table2", "--profile", "smoke", "--dry-run"]) == 0
    assert "0 to run" in capsys.readouterr().out


def test_tiny_table2_shares_table3_runs_and_trains_half_at_the_original_window():
    from profile_helpers import grid_of

    from longred_bench.reproduce.grid import TrainedRow, trained_rows

    prof, table3 = grid_of("table2"), grid_of("table3")
    runs = trained_rows(prof)
    for run in runs:
        if run.row in ("cpt", "mix-cpt"):
            assert run in trained_rows(table3)
            assert run.config(prof) == run.config(table3)
    count = {row: sum(r.row == row for r in runs) for row in prof.rows}
    assert count == {"cpt": 6, "long-short-cpt": 6, "mix-cpt": 6}
    half = TrainedRow("long-short-cpt", "abf:theta=2e6", 0).config(prof)
    long = TrainedRow("cpt", "abf:theta=2e6", 0).config(prof)
    assert half.mix == {"long": 0.5, "s2l": 0.5}
    assert (half.steps, half.tokens_per_step, half.lr, half.long_data) == (
        long.steps, long.tokens_per_step, long.lr, long.long_data)  # fmt: skip
