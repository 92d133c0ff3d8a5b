"""Commands name a local model or text file by its absolute path in their config and records:
a call from another folder, whose ``orig`` is another model, replaced the results an ``--out``
held for this folder's ``orig`` (the name as typed matched), while the same model spelled
``../a/orig`` was refused; a model folder copied out of the cache and edited was called a
corrupt cache entry, with the advice to delete it."""

from __future__ import annotations

import json

import pytest

from longred_bench.cli.named import check_model_files, local_names, local_text
from longred_bench.cli.outputs import check_drift_out, check_eval_out
from longred_bench.errors import UserError


@pytest.fixture
def two_folders(tmp_path, monkeypatch):
    """``a/orig`` and ``b/orig``: two models of one relative name."""
    for side in ("a", "b"):
        (tmp_path / side / "orig").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "a")
    return tmp_path


def _eval_records(out, model: str) -> None:
    from longred_bench.evaluation.config import EvalConfig

    config = {"command": "eval", **EvalConfig(model=model, suite="short_tiny").to_dict()}
    out.mkdir(parents=True, exist_ok=True)
    (out / "eval.jsonl").write_text(json.dumps({"kind": "x", "provenance": {"config": config}}))


def _eval_config(model: str) -> dict:
    from longred_bench.evaluation.config import EvalConfig

    return EvalConfig(model=local_names(model), suite="short_tiny").to_dict()


def test_names_are_absolute_for_local_files_only(two_folders) -> None:
    assert local_names("orig") == str(two_folders / "a" / "orig")
    assert local_names("../b/orig") == str(two_folders / "b" / "orig")
    assert local_names("tiny-random") == "tiny-random"
    assert local_names("org/hub-model") == "org/hub-model"  # no such folder: a hub id
    (two_folders / "a" / "text.txt").write_text("words")
    assert local_text("text.txt") == str(two_folders / "a" / "text.txt")
    for source in ("brown", "brown:test", "random", None):
        assert local_text(source) == source


def test_an_eval_out_tells_two_models_of_one_relative_name_apart(two_folders, monkeypatch):
    out = two_folders / "out"
    _eval_records(out, local_names("orig"))  # a's orig, as eval records it now
    check_eval_out(out, _eval_config("orig"))
    monkeypatch.chdir(two_folders / "b")
    with pytest.raises(UserError, match=r"another config \(differs in model\)"):
        check_eval_out(out, _eval_config("orig"))  # b's orig: another model
    check_eval_out(out, _eval_config("../a/orig"))  # a's, spelled from b


def test_records_with_a_relative_name_compare_as_named_from_here(two_folders, monkeypatch):
    """Results written before names were recorded absolute: ``orig`` read from this folder."""
    out = two_folders / "out"
    _eval_records(out, "orig")
    check_eval_out(out, _eval_config("orig"))
    monkeypatch.chdir(two_folders / "b")
    with pytest.raises(UserError, match=r"differs in model"):
        check_eval_out(out, _eval_config("../a/orig"))  # "orig" from here is b's


def test_a_drift_out_tells_two_originals_of_one_relative_name_apart(two_folders, monkeypatch):
    import yaml

    from longred_bench.jobs.configs import DriftConfig

    def mine() -> dict:
        return DriftConfig(original=local_names("orig"), rope=("pi:factor=2",)).to_dict()

    out = two_folders / "out"
    out.mkdir()
    (out / "config.yaml").write_text(yaml.safe_dump(mine()))
    check_drift_out(out, mine())
    monkeypatch.chdir(two_folders / "b")
    with pytest.raises(UserError, match=r"another config \(differs in original\)"):
        check_drift_out(out, mine())


def test_a_model_folder_copied_from_the_cache_and_edited_is_the_users(tmp_path, monkeypatch):
    from longred_bench.cache import write_manifest

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "window": 8192}))
    write_manifest(folder)
    check_model_files(str(folder))  # as copied: its files match
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "window": 512}))
    with pytest.raises(UserError) as refused:
        check_model_files(str(folder))
    message = str(refused.value)
    assert "differ from the cache manifest.json copied with the folder" in message
    assert f"delete {folder / 'manifest.json'} to use the folder as your own model" in message
    (folder / "manifest.json").unlink()
    check_model_files(str(folder))


@pytest.mark.integration
def test_drift_records_the_original_by_its_path_and_refuses_another_of_its_name(
    tmp_path, monkeypatch, capsys
):
    import yaml

    from longred_bench.cli import main
    from longred_bench.models.loading import load

    loaded = load("tiny-random")
    for side in ("a", "b"):
        loaded.model.save_pretrained(tmp_path / side / "orig")
        loaded.tokenizer.save_pretrained(tmp_path / side / "orig")
    monkeypatch.chdir(tmp_path / "a")
    argv = ["drift", "--original", "orig", "--rope", "pi:factor=2", "--num-texts", "1",
            "--seq-len", "32", "--texts", "random", "--quiet",
            "--out", str(tmp_path / "out")]  # fmt: skip
    assert main(argv) == 0
    saved = yaml.safe_load((tmp_path / "out" / "config.yaml").read_text())
    assert saved["original"] == str(tmp_path / "a" / "orig")
    monkeypatch.chdir(tmp_path / "b")
    capsys.readouterr()
    assert main(argv) == 2
    assert "differs in original" in capsys.readouterr().err
