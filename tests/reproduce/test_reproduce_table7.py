"""``reproduce table7 --profile smoke``: attention-only CPT trained, the merge built from the
`cpt` run of its seed after the pool's units, every row evaluated, the paper's Table 7 beside ours
and LongReD-C's claims against both baselines; the tiny profile's rows and merge sources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longred_bench.cli import main
from longred_bench.results import read_records


@pytest.mark.integration
def test_reproduce_table7_smoke(tmp_path, smoke_cache):
    out = tmp_path / "report"
    argv = ["reproduce", "table7", "--profile", "smoke", "--out", str(out), "--quiet"]
    assert main([*argv, "--jobs", "2"]) == 0
    records = read_records(out / "table7.jsonl.gz")
    ext = "abf:theta=1e5"
    rows = {(r["row"], r["extension"]) for r in records}
    trained = ("cpt", "attention-only", "merge", "longred-c")
    assert rows == {("original", None), ("zero-shot", ext)} | {(row, ext) for row in trained}
    train = {r["row"]: r["train"] for r in records if r["train"]}
    assert train["merge"]["steps"] == 0 and train["attention-only"]["steps"] == 2
    # The merge interpolated the cpt run of its seed (the merged model's own run.json says so).
    merged = json.loads((Path(train["merge"]["dir"]) / "run.json").read_text())
    assert Path(merged["merge_with"]).parent == Path(train["cpt"]["dir"])
    md = (out / "table7.md").read_text()
    assert "| PET (attention-only tuning) | 66.82 | 30.16 | 70.78 | 85.86 |" in md
    assert "(T7m) LongReD-C keeps more" in md and "(T7p) LongReD-C keeps more" in md
    assert (out / "table7.png").read_bytes()[:4] == b"\x89PNG"


def test_tiny_table7_is_one_extension_with_table3_baselines_and_merges_its_cpt_seeds():
    from profile_helpers import grid_of

    from longred_bench.reproduce.grid import TrainedRow, trained_rows

    prof, table3 = grid_of("table7"), grid_of("table3")
    assert prof.extensions == ("pi:factor=2",)  # where premise (a) holds at tiny
    runs = trained_rows(prof)
    assert {row: sum(r.row == row for r in runs) for row in prof.rows} == dict.fromkeys(
        prof.rows, 3)  # fmt: skip
    for run in runs:
        if run.row in ("cpt", "longred-c"):
            assert run in trained_rows(table3) and run.config(prof) == run.config(table3)
    sources = {TrainedRow("merge", "pi:factor=2", s).config(prof).merge_with for s in range(3)}
    assert len(sources) == 3 and all(s.endswith("/final") and "train-cpt-" in s for s in sources)
