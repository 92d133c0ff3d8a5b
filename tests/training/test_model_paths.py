"""A training run names its models by absolute paths: its ``config.yaml`` means the same from any
folder, and the run resumed from another folder (its model named from there) is the same
config; a run saved with a relative path still resumes from the folder it was started in."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from longred_bench.cli import main


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    from longred_bench.models.loading import load

    loaded = load("tiny-random")
    path = tmp_path / "a" / "m"
    loaded.model.save_pretrained(path)
    loaded.tokenizer.save_pretrained(path)
    return path


def _train(*sets: str, out: str, resume: bool = False) -> int:
    argv = ["train", "--recipe", "cpt", "--profile", "smoke", "--quiet", "--out", out,
            "--set", *sets, "steps=2", "checkpoint_every=1"]  # fmt: skip
    return main([*argv, *(["--resume"] if resume else [])])


def test_a_relative_model_path_is_saved_absolute_and_resumes_from_elsewhere(
    model_dir: Path, tmp_path: Path, monkeypatch, capsys
) -> None:
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    assert _train("model=m", out="run") == 0
    saved = yaml.safe_load((tmp_path / "a" / "run" / "config.yaml").read_text())
    assert saved["model"] == str(model_dir)
    monkeypatch.chdir(tmp_path / "b")
    capsys.readouterr()
    assert _train("model=../a/m", out="../a/run", resume=True) == 0  # the same model and run
    assert "another config" not in capsys.readouterr().err
    assert _train("model=tiny-random", out="../a/run", resume=True) == 2  # another model
    assert "differs in model" in capsys.readouterr().err


def test_a_run_saved_with_a_relative_path_resumes_from_its_folder(
    model_dir: Path, tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.chdir(tmp_path / "a")
    assert _train("model=m", out="run") == 0
    config = tmp_path / "a" / "run" / "config.yaml"
    saved = yaml.safe_load(config.read_text())
    config.write_text(yaml.safe_dump({**saved, "model": "m"}))  # as runs were saved before
    (tmp_path / "a" / "run" / "final" / "config.json").unlink()  # not finished: it trains
    capsys.readouterr()
    assert _train("model=m", out="run", resume=True) == 0
    assert "another config" not in capsys.readouterr().err


def test_relative_data_is_saved_absolute_so_another_folders_file_is_another_config(
    model_dir: Path, tmp_path: Path, monkeypatch, capsys
) -> None:
    """``long_data=txt:long.txt`` resumed from another folder read that folder's long.txt under
    the same config; the path is saved absolute: the same file named from there resumes, another
    file of the same relative name is another config."""
    words = " ".join(f"word{i % 97} and more text {i}." for i in range(4000))
    for name in ("a", "b"):
        (tmp_path / name).mkdir(exist_ok=True)
        (tmp_path / name / "long.txt").write_text(words if name == "a" else words.upper())
    monkeypatch.chdir(tmp_path / "a")
    assert _train("model=m", "long_data=txt:long.txt", out="run") == 0
    saved = yaml.safe_load((tmp_path / "a" / "run" / "config.yaml").read_text())
    assert saved["long_data"] == f"txt:{tmp_path / 'a' / 'long.txt'}"
    monkeypatch.chdir(tmp_path / "b")
    capsys.readouterr()
    argv = ("model=../a/m", "long_data=txt:long.txt")
    assert _train(*argv, out="../a/run", resume=True) == 2  # b's long.txt: not the run's data
    assert "differs in long_data" in capsys.readouterr().err
    assert _train("model=../a/m", "long_data=txt:../a/long.txt", out="../a/run",
                  resume=True) == 0  # fmt: skip
