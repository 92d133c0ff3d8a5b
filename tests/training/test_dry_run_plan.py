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


def test_a_dry_run_refuses_data_too_short_for_its_stream(tmp_path, capsys, monkeypatch) -> None:
    """It noted "epochs not counted: ... has no document of 512 tokens" and exited 0; the run
    refused the same data once the model had loaded. Long enough data still plans."""
    short, long = tmp_path / "short.txt", tmp_path / "long.txt"
    short.write_text("A short text. " * 5)
    long.write_text("A longer text of many words, " * 400)
    argv = ["train", "--recipe", "cpt", "--profile", "smoke", "--dry-run", "--set"]
    assert main([*argv, f"long_data=txt:{short}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: train: the long stream cannot start: data 'txt:") and (
        "has no document of 512 tokens" in err and err.count("\n") == 1
    )
    assert main([*argv, f"long_data=txt:{long}"]) == 0
    assert "total tokens" in capsys.readouterr().out
    assert main([*argv, f"long_data={short}"]) == 2  # a bare file path: the same refusal
    assert "fewer than one window of 512" in capsys.readouterr().err
    # a hub source's fallback is what a run without the hub reads: refused offline (or where
    # the hub does not answer), where the run reads it; said only where the hub answers
    from longred_bench.data import hub_corpora, source_documents

    hub = f"long_data=hf:someorg/long-books|txt:{short}"
    assert main([*argv, hub]) == 2
    assert "the long stream cannot start: data 'txt:" in capsys.readouterr().err
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(source_documents, "_CHOSEN", {})  # another process, with the hub
    monkeypatch.setattr(hub_corpora, "hub_revision", lambda dataset, revision: "abc123")
    assert main([*argv, hub]) == 0
    assert "offline (its fallback): epochs not counted" in capsys.readouterr().out
