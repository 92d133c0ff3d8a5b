"""A profile's model as a local folder that cannot load (no weights, no tokenizer files) is
refused before any unit runs by the calls that load it (a run, ``--unit``, ``--emit-slurm``),
in one line naming the file and key; a plan (``--dry-run``, ``--list-units``) reads the config
alone and still plans it."""

from __future__ import annotations

import json
import re

import pytest

from longred_bench.cli import main

CONFIG = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 300,
          "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 4,
          "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 256,
          "bos_token_id": 1, "eos_token_id": 2}  # fmt: skip


def _profile(tmp_path, monkeypatch, *, weights: bool, tokenizer: bool):
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(CONFIG))
    if weights:
        (folder / "model.safetensors").write_bytes(b"not read before the check")
    if tokenizer:
        (folder / "tokenizer_config.json").write_text("{}")
    path = tmp_path / "mine.yaml"
    path.write_text("extends: smoke\nmodel: {name: ./m, window: 256, layers: 4}\n")
    return path


@pytest.mark.parametrize(
    ("weights", "tokenizer", "said"),
    [
        (True, False, "': its folder holds no tokenizer files ("),
        (False, True, "a config.json but no weights"),
    ],
)
def test_a_model_folder_that_cannot_load_is_refused_before_any_unit(
    tmp_path, monkeypatch, capsys, weights, tokenizer, said
) -> None:
    """A run started its first unit and stopped there; ``--emit-slurm`` wrote array jobs whose
    every task would stop on the cluster."""
    path = _profile(tmp_path, monkeypatch, weights=weights, tokenizer=tokenizer)
    for extra in ([], ["--emit-slurm", str(tmp_path / "jobs")],
                  ["--unit", "eval_original_short_tiny"]):  # fmt: skip
        assert main(["reproduce", "table3", "--profile", str(path), *extra]) == 2, extra
        err = capsys.readouterr().err
        assert err.startswith(f"error: profile {path}: model.name '{tmp_path / 'm'}': "), err
        assert said in err and len(err.strip().splitlines()) == 1, err
        named = re.findall(re.escape(str(tmp_path / "m")) + r"(?!ine\.yaml)", err)
        assert len(named) == 1, err  # the model named once, not three times
    assert not (tmp_path / "jobs").exists()
    assert not (tmp_path / "cache" / "runs").exists() or not any(
        p.name.startswith(("table3-", "train-")) for p in (tmp_path / "cache" / "runs").iterdir()
    )
    # a plan reads the config alone: planned, not refused
    assert main(["reproduce", "table3", "--profile", str(path), "--dry-run"]) == 0
    assert main(["reproduce", "table3", "--profile", str(path), "--list-units"]) == 0
