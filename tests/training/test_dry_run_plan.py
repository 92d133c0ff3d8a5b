"""``train --dry-run``: the rows of each stream, the tokens per step and in total, stage by stage
where a recipe reads its streams in turn, as the run's loop reads them; nothing is trained."""

from __future__ import annotations

from longred_bench.cli import main
from longred_bench.training.config import resolve_config
from longred_bench.training.plan import micro_rows


def test_dry_run_prints_plan(capsys) -> None:
    argv = ["train", "--recipe", "longred", "--profile", "smoke", "--out", "x", "--dry-run"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "stream long: 2 rows x 512 tokens per step" in out
    assert "stream short: 12 rows x 64 tokens per step" in out
    assert "tokens per step: 2048" in out and "total tokens: 6144" in out


def test_a_dry_run_of_a_staged_recipe_counts_each_stage_at_its_own_steps(capsys) -> None:
    """LinearARD's long CE stage then its distillation, LongRecipe's training then replay:
    each stage's rows and steps, and the totals of the run as its loop reads them."""
    argv = ["train", "--profile", "tiny", "--dry-run", "--recipe"]
    assert main([*argv, "linearard", "--set", "cpt_steps=10"]) == 0
    out = capsys.readouterr().out
    assert "stage 1, 10 steps: stream long: 8 rows x 1024 tokens (8192 tokens a step)" in out
    assert "stage 2, 64 steps: stream s2l: 32 rows x 256 tokens (8192 tokens a step)" in out
    assert "steps: 74\ntotal tokens: 606208" in out  # (10 + 64) x 8,192
    assert main([*argv, "longrecipe"]) == 0
    out = capsys.readouterr().out
    cfg = resolve_config("longrecipe", profile="tiny")
    rows = micro_rows(cfg, 256)  # tiny-base's window; no micro-steps at tiny
    want = 64 * rows["long"] * 320 + 16 * rows["short"] * 256  # each stage its own rows
    assert f"steps: 80\ntotal tokens: {want}" in out
    assert "stage 2, 16 steps: stream short" in out and "tokens per step: " not in out
    # tiny's longrecipe measures its anchors: the brief run, not in the totals, is said
    assert cfg.anchors == ("measured",)
    rows = max(1, round(cfg.tokens_per_step * cfg.mix["long"] / 1024))
    assert (f"before them, the anchors measured: a brief cpt run of {cfg.impact_steps} steps of "
            f"{rows} x 1024 tokens ({cfg.impact_steps * rows * 1024} tokens, not in the total), "
            "then both models over 32 windows of 1024 tokens") in out  # fmt: skip
