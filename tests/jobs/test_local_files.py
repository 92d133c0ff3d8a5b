"""A unit that reads a local file (a perplexity corpus, drift texts, training data, a model folder
outside the run cache) is keyed by the file too: another file at the same path, or a relative path
read from a folder that holds another file, is another unit, not the first one's result; a unit
naming no local file keeps the key it had."""

from __future__ import annotations

import os
from pathlib import Path

from longred_bench.jobs.units import train_key, unit_folder
from longred_bench.results import config_hash

PPL = {"model": "tiny-random", "suite": "ppl", "corpus": "./text.txt", "lengths": [64],
       "samples": 2, "seed": 0}  # fmt: skip


def test_a_relative_corpus_read_from_another_folder_is_another_unit(tmp_path, monkeypatch):
    for name, text in (("a", "one text. " * 50), ("b", "another, longer text. " * 50)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "text.txt").write_text(text)
    monkeypatch.chdir(tmp_path / "a")
    here = unit_folder("table3-eval", PPL)
    assert unit_folder("table3-eval", PPL) == here  # the same file: the same unit
    monkeypatch.chdir(tmp_path / "b")
    assert unit_folder("table3-eval", PPL) != here
    monkeypatch.chdir(tmp_path / "a")
    path = tmp_path / "a" / "text.txt"
    path.write_text("replaced. " * 60)  # another file at the same path
    os.utime(path, ns=(1, 1))
    assert unit_folder("table3-eval", PPL) != here


def test_a_unit_of_no_local_file_keeps_its_key() -> None:
    config = {**PPL, "corpus": "austen"}
    assert unit_folder("table3-eval", config) == f"runs/table3-eval/{config_hash(config)}"


def test_a_training_run_is_keyed_by_its_local_data_and_model(tmp_path: Path) -> None:
    from longred_bench.models.loading import load
    from longred_bench.training.config import resolve_config

    data = tmp_path / "long.txt"
    data.write_text("words and more words. " * 200)
    model = tmp_path / "m"
    loaded = load("tiny-random")
    loaded.model.save_pretrained(model)
    loaded.tokenizer.save_pretrained(model)
    cfg = resolve_config("cpt", profile="smoke", overrides={"long_data": f"txt:{data}",
                                                            "model": str(model)})  # fmt: skip
    first = train_key(cfg)
    assert train_key(cfg) == first
    data.write_text("other words. " * 300)
    assert train_key(cfg) != first
    second = train_key(cfg)
    (model / "config.json").write_text((model / "config.json").read_text() + "\n")
    assert train_key(cfg) != second  # the model folder's files changed
