"""``reproduce longrecipe --profile smoke``: full-length CPT, RPES, PoSE and LongRecipe trained at
the same steps and tokens and evaluated, the report with its NIAH(M), cost table and verdicts;
the tiny profile's CPT runs shared with Table 3 and LongRecipe's replay inside the budget."""

from __future__ import annotations

import pytest

from longred_bench.cli import main
from longred_bench.reports.verdict_rules import LABEL_RULE
from longred_bench.results import read_records


@pytest.mark.integration
def test_reproduce_longrecipe_smoke(tmp_path, smoke_cache):
    out = tmp_path / "report"
    argv = ["reproduce", "longrecipe", "--profile", "smoke", "--out", str(out), "--quiet"]
    assert main([*argv, "--jobs", "2"]) == 0
    records = read_records(out / "longrecipe.jsonl.gz")
    ext = "pi:factor=4"
    rows = {(r["row"], r["extension"]) for r in records}
    trained = ("cpt", "rpes", "pose", "longrecipe")
    assert rows == {("original", None), ("zero-shot", ext)} | {(row, ext) for row in trained}
    steps = {r["row"]: r["train"]["steps"] for r in records if r["train"]}
    assert set(steps.values()) == {4}, steps
    # One per-step record for each trained run, with the training's own provenance; R4 reads
    # it from the records, not from the run folder.
    timed = [r for r in records if r["kind"] == "train_steps"]
    assert sorted(r["row"] for r in timed) == sorted(trained)
    for r in timed:
        assert len(r["step_seconds"]) == len(r["step_tokens"]) == 4
        assert r["step_tokens"][-1] == r["train"]["tokens"]
        assert r["provenance"]["source_hash"] and r["provenance"]["config"]["recipe"] == r["row"]
    ppl = {(r["row"], r["extension"]) for r in records if r["kind"] == "ppl"}
    assert ppl == rows  # perplexity by position for every row
    md = (out / "longrecipe.md").read_text()
    assert md.count(LABEL_RULE) == 1  # the label rule once, above the evidence
    assert "## Cost per training token" in md and "## NIAH(M)" in md
    longrecipe = next(r["train"] for r in records if r["row"] == "longrecipe" and r["train"])
    cpt = next(r["train"] for r in records if r["row"] == "cpt" and r["train"])
    share = f"{longrecipe['long_len'] / cpt['long_len']:.0%}"
    assert f"`LongRecipe` trains on samples of {share} of the target window" in md
    assert "## Perplexity by position" in md and "| `pi:factor=4` | PoSE | 1 |" in md
    assert (out / "longrecipe_ppl.png").read_bytes()[:4] == b"\x89PNG"
    for key in ("(R1)", "(R2)", "(R3)", "(R4)"):
        assert f"| {key} " in md, key
    assert "`longrecipe` 1 run(s), 4 step(s) (per-step timings)" in md
    assert (out / "longrecipe.png").read_bytes()[:4] == b"\x89PNG"


def test_tiny_longrecipe_rows_share_table3_cpt_and_one_budget():
    """Full-length CPT is Table 3's run (same config, so cached once); every compared row has 3
    seeds; every row takes the same steps and tokens per step, LongRecipe's last quarter of
    steps replaying original-window text; samples are 25-31% of the target window."""
    from profile_helpers import grid_of

    from longred_bench.errors import UserError
    from longred_bench.reproduce.grid import TrainedRow, replay_within_budget, trained_rows

    prof, table3 = grid_of("longrecipe"), grid_of("table3")
    runs = trained_rows(prof)
    for run in runs:
        if run.row == "cpt":
            assert run in trained_rows(table3) and run.config(prof) == run.config(table3)
    count = {row: sum(r.row == row for r in runs) for row in prof.rows}
    assert count == {"cpt": 3, "rpes": 3, "pose": 3, "longrecipe": 3, "longrecipe-digit": 1}
    ext = prof.extensions[0]
    cfgs = {row: TrainedRow(row, ext, 0).config(prof) for row in prof.rows}
    for row, cfg in cfgs.items():
        assert cfg.steps + cfg.replay_steps == 64, row
        assert (cfg.long_data, cfg.retrieval_fraction) == ("austen+kjv+retrieval", 0.3), row
    lr = cfgs["longrecipe"]
    assert (lr.steps, lr.replay_steps, lr.mix["long"], lr.mix["short"]) == (48, 16, 0.5, 0.5)
    assert lr.tokens_per_step * lr.mix["long"] == cfgs["cpt"].tokens_per_step
    assert cfgs["longrecipe-digit"].anchors == ("digit",) and lr.anchors == ("measured",)
    window = cfgs["cpt"].long_len
    assert window == 1024
    for row, share in (("pose", 0.25), ("rpes", 0.25), ("longrecipe", 0.3125)):
        assert cfgs[row].long_len / window == share, row
    with pytest.raises(UserError, match="needs steps >= 2, got 1"):
        replay_within_budget(cfgs["cpt"].replace(steps=1))


def test_longrecipe_keeps_its_samples_below_a_small_extended_window():
    """Where the profile's LongRecipe length does not fit below the extended window (a model of
    a smaller window than the profile's), its samples take the paper's 30% of that window
    (they must lie below it), while CPT trains at the whole window; both runs then start."""
    from profile_helpers import ctx_of

    from longred_bench.reproduce.plan import startup_error
    from longred_bench.reproduce.registry import get_spec

    ctx = ctx_of("longrecipe", "smoke", overrides={"steps": 4, "long_len": 2048})
    steps = {s.label: s.unit.config for s in get_spec("longrecipe").steps(ctx)
             if s.unit.kind == "train"}  # fmt: skip
    cpt, lr = steps["train cpt pi:factor=4 seed 0"], steps["train longrecipe pi:factor=4 seed 0"]
    assert cpt["long_len"] == 1024 and lr["long_len"] == round(0.3 * 1024)
    assert startup_error(cpt, ctx.profile) == startup_error(lr, ctx.profile) == ""


def test_longrecipe_keeps_its_profiles_share_of_the_window_at_any_extension(monkeypatch):
    """LongRecipe's samples in a table take the share of the extended window its profile states
    (``training.longrecipe``'s ``long_len`` over the window of its own ``rope``): tiny's 320 of
    1,024 at ABF x4 is 640 of 2,048 at ABF x8. The paper profiles' rows are LongRecipe's about
    30% of the table's window (paper: 24,576 of 80K stated, 9,830 of the table's 32K), not 75%
    of it; paper-128k states 25% (rows of 32K split one per GPU), paper-mistral's floor is its
    32K window."""
    from profile_helpers import grid_of

    from longred_bench.reproduce.grid import TrainedRow, extension_window

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    grid = grid_of("longrecipe", "tiny", extensions=["abf:theta=2e6", "abf:theta=2e6,factor=8"])
    assert TrainedRow("longrecipe", "abf:theta=2e6", 0).config(grid).long_len == 320
    assert TrainedRow("longrecipe", "abf:theta=2e6,factor=8", 0).config(grid).long_len == 640
    shares = {}
    for profile in ("paper", "paper-128k", "paper-linearard", "paper-mistral"):
        grid = grid_of("longrecipe", profile)
        for ext in grid.extensions:
            cfg = TrainedRow("longrecipe", ext, 0).config(grid)
            shares[profile] = round(cfg.long_len / extension_window(grid, ext), 3)
    assert shares == {"paper": 0.3, "paper-128k": 0.25, "paper-linearard": 0.3,
                      "paper-mistral": 0.25}  # fmt: skip
