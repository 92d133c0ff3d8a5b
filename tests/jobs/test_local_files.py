"""A unit that reads a local file (a perplexity corpus, drift texts, training data, a model folder
outside the run cache) is keyed by the file too: another file at the same path, or a relative path
read from a folder that holds another file, is another unit, not the first one's result; a unit
naming no local file keeps the key it had."""

from __future__ import annotations

import os
from pathlib import Path

from longred_bench.jobs.local_files import MODEL_KEYS, files_stamp, local_stamps
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


def test_a_data_folder_is_stamped_with_the_files_of_its_subfolders(tmp_path: Path) -> None:
    """``txt:FOLDER`` reads every text under it (a dataset on disk keeps its splits in
    subfolders): a file rewritten in a subfolder makes another unit."""
    from longred_bench.jobs.local_files import local_stamps

    part = tmp_path / "corpus" / "part"
    part.mkdir(parents=True)
    (part / "a.txt").write_text("first text. " * 30)
    config = {"long_data": f"txt:{tmp_path / 'corpus'}"}
    first = local_stamps(config)
    assert first and local_stamps(config) == first
    (part / "a.txt").write_text("another, longer text. " * 30)
    assert local_stamps(config) != first


def test_table1_and_pcd_units_of_a_local_model_are_keyed_by_its_files(tmp_path: Path) -> None:
    """Table 1's zero-shot drift and PCD's units name their own folders (not through
    ``unit_folder``): a profile model at a local path, its files changed, is another unit."""
    import dataclasses

    from longred_bench.models.loading import load
    from longred_bench.profiles import load_profile
    from longred_bench.reproduce.pcd import pcd_unit
    from longred_bench.reproduce.table1 import zero_shot_unit

    model = tmp_path / "m"
    loaded = load("tiny-random")
    loaded.model.save_pretrained(model)
    loaded.tokenizer.save_pretrained(model)
    smoke = load_profile("smoke")
    prof = dataclasses.replace(smoke, model=dataclasses.replace(smoke.model, name=str(model)))

    class Ctx:
        profile = prof

    def folders() -> tuple[str, str]:
        config = {"model": str(model), "suite": "ruler", "seed": 0}
        return (zero_shot_unit(prof, ("pi:factor=2",)).folder,
                pcd_unit(Ctx, "eval", config).folder)  # fmt: skip

    before = folders()
    assert folders() == before
    (model / "config.json").write_text((model / "config.json").read_text() + "\n")
    after = folders()
    assert after[0] != before[0] and after[1] != before[1]


def test_a_file_of_the_same_size_written_again_is_another_stamp(tmp_path: Path) -> None:
    text = tmp_path / "text.txt"
    text.write_text("aaaa")
    os.utime(text, ns=(10**9, 10**9))
    first = files_stamp(text)
    text.write_text("bbbb")  # same size: only the modification time tells
    os.utime(text, ns=(2 * 10**9, 2 * 10**9))
    assert files_stamp(text) != first


def test_every_model_key_stamps_its_local_folder(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    stamps = {key: local_stamps({key: str(folder)}) for key in MODEL_KEYS}
    assert all(str(folder) in s.get("local_files", {}) for s in stamps.values()), stamps
    (folder / "config.json").write_text('{"changed": true}')
    assert local_stamps({"teacher": str(folder)}) != stamps["teacher"]


def test_a_jsonl_measurement_text_is_keyed_apart_from_the_old_reading(tmp_path: Path) -> None:
    """Drift texts and a ppl corpus in a .jsonl file are read line by line now (their JSON was
    measured as text): such units get another key, so cached results of the old reading are not
    reused. Training data in the same file keeps its key (its reading did not change)."""
    path = tmp_path / "docs.JSONL"
    path.write_text('{"text": "hello"}\n')
    for key in ("texts", "corpus"):
        assert list(local_stamps({key: str(path)})["local_files"]) == [f"{path} (JSON lines)"]
    assert list(local_stamps({"long_data": str(path)})["local_files"]) == [str(path)]
