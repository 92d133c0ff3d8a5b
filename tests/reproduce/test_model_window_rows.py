"""Rows whose long rows are the original window follow the profile's model: a user's profile that
extends ``smol`` (whose ``control``, ``pose`` and ``rpes`` rows are 8,192 tokens, SmolLM2's
window) with a 4K model trains ``control`` at the original RoPE on 4,096-token rows and PoSE /
RPES on samples of 4,096, never twice the model's window."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longred_bench.cli import main

# SmolLM2-135M's shape with a 4,096-token window (a config only: nothing is loaded).
CONFIG = {"vocab_size": 49152, "hidden_size": 576, "intermediate_size": 1536,
          "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3,
          "max_position_embeddings": 4096, "rope_theta": 1e5, "model_type": "llama"}  # fmt: skip


@pytest.fixture
def window_4k(tmp_path: Path) -> Path:
    model = tmp_path / "my-model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(CONFIG))
    path = tmp_path / "mine.yaml"
    path.write_text(f"extends: smol\nmodel: {{name: {model}, window: 4096, layers: 30}}\n")
    return path


def _configs(table: str, profile: Path) -> dict[tuple[str, str | None], object]:
    from longred_bench.profiles import load_profile
    from longred_bench.reproduce.grid import trained_rows
    from longred_bench.reproduce.registry import get_spec

    spec = get_spec(table)
    grid = spec.grid(spec.resolve(load_profile(str(profile)), progress=False))
    return {(r.row, r.extension): r.config(grid) for r in trained_rows(grid) if r.seed == 0}


def test_original_window_rows_follow_a_smaller_model_window(window_4k, tmp_path, monkeypatch):
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    table3 = _configs("table3", window_4k)
    control = table3[("control", None)]
    assert (control.rope, control.long_len) == (None, 4096)
    assert table3[("cpt", "abf:theta=4e6")].long_len == 16384  # the 16K extended window
    longrecipe = _configs("longrecipe", window_4k)
    for row in ("pose", "rpes"):
        assert longrecipe[(row, "abf:theta=4e6")].long_len == 4096, row
    assert longrecipe[("longrecipe", "abf:theta=4e6")].long_len == 10240  # its own length
    # smol itself keeps its keys: its rows already are its model's window.
    smol = _configs("table3", Path("smol"))
    assert smol[("control", None)].long_len == 8192


def test_the_plan_of_a_4k_model_starts_every_original_window_row(
    window_4k, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    for table in ("table3", "longrecipe"):
        assert main(["reproduce", table, "--profile", str(window_4k), "--dry-run"]) == 0
        text = capsys.readouterr().out
        assert "cannot start" not in text, table
