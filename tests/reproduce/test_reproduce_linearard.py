"""``reproduce linearard --profile smoke``: the baselines and the four LinearARD rows trained and
evaluated, the reduced-budget rows at 1/64 of the tokens, the report with its cost table and
verdicts; the tiny profile's seeds and runs shared with Table 3."""

from __future__ import annotations

import pytest

from longred_bench.cli import main
from longred_bench.reports.verdict_rules import LABEL_RULE
from longred_bench.results import read_records


@pytest.mark.integration
def test_reproduce_linearard_smoke(tmp_path, smoke_cache):
    out = tmp_path / "report"
    argv = ["reproduce", "linearard", "--profile", "smoke", "--out", str(out), "--quiet"]
    assert main(argv) == 0  # in this process (Table 3's test runs these unit kinds in two)
    records = read_records(out / "linearard.jsonl.gz")
    ext = "abf:theta=1e5"
    rows = {(r["row"], r["extension"]) for r in records}
    trained = ("cpt", "longred-c", "linearard", "linearard-ft", "linearard-lite",
               "linearard-lite-ft")  # fmt: skip
    assert rows == {("original", None), ("zero-shot", ext)} | {(row, ext) for row in trained}
    tokens = {r["row"]: r["train"]["tokens"] for r in records if r["train"]}
    assert tokens["linearard-lite"] * 64 == tokens["linearard"] == tokens["cpt"]
    md = (out / "linearard.md").read_text()
    assert md.count(LABEL_RULE) == 1  # the label rule once, above the evidence
    assert "## Cost per training token" in md and "x CPT per token" in md
    for key in ("(L1)", "(L2)", "(L3)"):
        assert f"| {key} LinearARD" in md, key
    assert (out / "linearard.png").read_bytes()[:4] == b"\x89PNG"


def test_tiny_linearard_shares_table3_baseline_runs():
    """The baselines of the tiny LinearARD table are Table 3's runs at Table 3's extensions (same
    configs, so cached once); LinearARD with its LoRA has 3 seeds at both budgets, the
    all-weights rows one."""
    from profile_helpers import grid_of

    from longred_bench.reproduce.grid import TrainedRow, trained_rows

    prof, table3 = grid_of("linearard"), grid_of("table3")
    runs = trained_rows(prof)
    for run in runs:
        if run.row in ("cpt", "longred-c"):
            assert run in trained_rows(table3)
            assert run.config(prof) == run.config(table3)
    assert prof.extensions == table3.extensions
    count = {row: sum(r.row == row for r in runs) for row in prof.rows}
    assert count == {"cpt": 6, "longred-c": 6, "linearard": 6, "linearard-ft": 2,
                     "linearard-lite": 6, "linearard-lite-ft": 2}  # fmt: skip
    full = TrainedRow("linearard", "pi:factor=2", 0).config(prof)
    lite = TrainedRow("linearard-lite", "pi:factor=2", 0).config(prof)
    ft = TrainedRow("linearard-ft", "pi:factor=2", 0).config(prof)
    assert full.steps * full.tokens_per_step == 64 * lite.steps * lite.tokens_per_step
    assert (full.lora_rank, ft.lora_rank, lite.lora_rank) == (8, 0, 8)


def test_linearard_rows_start_from_one_light_cpt_run_per_extension_and_seed():
    """LinearARD distils after a lightweight CPT (its paper): each LinearARD row's student is the
    final checkpoint of ``cpt-light`` (CPT at a quarter of the steps, same extension and seed),
    trained once before every LinearARD row that starts from it."""
    from profile_helpers import grid_of

    from longred_bench.jobs.units import train_unit
    from longred_bench.reproduce.grid import TrainedRow, grid_steps
    from longred_bench.reproduce.rows import LIGHT_CPT

    grid = grid_of("linearard")
    ext = grid.extensions[0]
    light = TrainedRow("cpt-light", ext, 0).config(grid)
    cpt = TrainedRow("cpt", ext, 0).config(grid)
    assert light.recipe == "cpt" and light.steps == cpt.steps // LIGHT_CPT
    assert light.replace(steps=cpt.steps) == cpt  # otherwise CPT's config
    source = train_unit(light)
    for row in ("linearard", "linearard-ft", "linearard-lite", "linearard-lite-ft"):
        cfg = TrainedRow(row, ext, 0).config(grid)
        assert cfg.init == str(source.dir / "final"), row
    assert TrainedRow("cpt", ext, 0).config(grid).init is None
    steps = grid_steps(grid)
    keys = [s.key for s in steps]
    assert keys.count(source.folder) == 1
    first = keys.index(source.folder)
    for s in steps:
        if s.label.startswith("train linearard") and f"{ext} seed 0" in s.label:
            assert s.after == (source.folder,) and keys.index(s.key) > first
