"""A user's profile file beyond the schema: a copy of a built-in one (what its fallback stands
in for, every table it cannot run named at once), a local model of the user's (its jobs pin no
model, a file that is no model refused), ``reproduce all`` on it (without tiny-base's report),
a table's own empty list of extensions, and an error in a file another extends, named at that
file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from longred_bench.cli import main


def _edit(path: Path, change) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def _llama_folder(folder: Path, window: int) -> Path:
    """A local Llama model's folder (its config alone: plans and checks read no weights), two
    layers deep with a ``window``-token window."""
    folder.mkdir()
    config = {"model_type": "llama", "max_position_embeddings": window, "num_hidden_layers": 2,
              "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128,
              "vocab_size": 300,
              "rope_parameters": {"rope_type": "default", "rope_theta": 1e4}}  # fmt: skip
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize("source", ["smol", "extends"])
def test_a_copys_fallback_says_whose_stand_in_it_is(tmp_path, capsys, source):
    """A copy of smol kept ``fallback: smollm2-135m`` with nothing beside it, so a user who
    changed ``name`` to their hub model ran SmolLM2 in its place offline: the copy says above
    the fallback which model it stands in for and to delete it with a new name."""
    if source == "extends":
        (tmp_path / "q.yaml").write_text("extends: smol\nruns: {seeds: 2}\n")
        source = str(tmp_path / "q.yaml")
    mine = tmp_path / "mine.yaml"
    assert main(["profiles", "new", "--from", source, "--out", str(mine)]) == 0
    lines = mine.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("fallback:"))
    assert lines[at - 2 : at] == [
        "  # The fallback stands in for HuggingFaceTB/SmolLM2-135M where the hub cannot give it:",
        "  # delete it when you change name (else it runs in your model's place).",
    ]
    about = next(i for i, line in enumerate(lines) if line.startswith("about:"))
    assert lines[about - 1] == ("# about: the copied profile's description; rewrite it for your "
                                "model and setting (`profiles` shows it; nothing runs from "
                                "it)")  # fmt: skip
    capsys.readouterr()
    assert main(["profiles", "show", str(mine)]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["model"]["fallback"] == "smollm2-135m"


def test_jobs_of_a_local_model_with_a_fallback_pin_no_model(tmp_path, monkeypatch, capsys):
    """A local model runs itself, never the profile's fallback: the emitted jobs exported
    LONGRED_NO_FALLBACK=1 with the comment "the hub's model" for a profile copied from smol
    (its fallback kept) whose model is a local folder."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    folder = _llama_folder(tmp_path / "mine", window=256)
    (folder / "model.safetensors").write_bytes(b"")  # the jobs load it: its files are checked
    (folder / "tokenizer_config.json").write_text("{}")
    profile = tmp_path / "mine.yaml"
    profile.write_text(f"extends: smoke\nmodel: {{name: '{folder}', window: 256, layers: 2, "
                       "fallback: tiny-random}\n")  # fmt: skip
    argv = ["reproduce", "table3", "--profile", str(profile), "--quiet"]
    assert main([*argv, "--emit-slurm", str(tmp_path / "jobs")]) == 0
    scripts = sorted((tmp_path / "jobs").glob("*.sbatch"))
    assert scripts
    for script in scripts:
        assert "LONGRED_NO_FALLBACK" not in script.read_text()
        assert "HF_HUB_OFFLINE" not in script.read_text()
    capsys.readouterr()


def test_show_names_every_table_a_full_copy_sets_that_cannot_run(tmp_path, capsys):
    """A copy of smol (every table section its own) with a model of a 512-token window: show
    stopped at table4's refusal, so the user fixed one table per call; now every one is named."""
    folder = _llama_folder(tmp_path / "lm", window=512)
    mine = tmp_path / "mine.yaml"
    assert main(["profiles", "new", "--from", "smol", "--out", str(mine)]) == 0

    def own_model(data):
        data["model"] = {"name": str(folder), "window": 512, "layers": 2}

    _edit(mine, own_model)
    capsys.readouterr()
    assert main(["profiles", "show", str(mine)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "tables the file sets cannot run: " in err
    for table in ("table4", "table7", "longrecipe"):
        assert f"{table} cannot run at profile mine" in err


def test_an_empty_list_of_table1_extensions_is_refused(tmp_path, capsys):
    """``tables.table1.extensions: []`` ran ``runs.extensions`` while the plan printed an empty
    "at :" line: the table's own empty list is refused, as ``runs.extensions: []`` is."""
    mine = tmp_path / "noext.yaml"
    mine.write_text("extends: smoke\ntables: {table1: {extensions: []}}\n")
    assert main(["reproduce", "table1", "--profile", str(mine), "--dry-run"]) == 2
    assert capsys.readouterr().err == (
        f"error: table1 cannot run at profile noext ({mine}): tables.table1.extensions: name at "
        "least one RoPE extension\n"
    )


def test_all_at_a_users_profile_leaves_out_tiny_bases_report(tmp_path, capsys):
    """``reproduce all --profile my.yaml`` built the suite's tiny-base (15 minutes) for a report
    about tiny-base, not about the profile's model; built-in profiles keep it in ``all``."""
    from longred_bench.profiles import load_profile
    from longred_bench.reproduce.registry import all_tables, table_names

    mine = tmp_path / "mine.yaml"
    mine.write_text("extends: smoke\n")
    assert "tiny_base" not in all_tables(load_profile(str(mine)))
    assert all_tables(load_profile("smoke")) == list(table_names())
    based = tmp_path / "based.yaml"
    based.write_text("extends: tiny\n")
    assert "tiny_base" in all_tables(load_profile(str(based)))
    assert main(["reproduce", "all", "--profile", str(mine), "--dry-run"]) == 0
    assert "tiny_base" not in capsys.readouterr().out


def test_a_profile_naming_a_file_as_its_model_is_refused_by_show(tmp_path, capsys):
    """``profiles show`` accepted a ``model.name`` that is a file (not a folder or ``.gguf``);
    the dry run refused it."""
    afile = tmp_path / "notes.txt"
    afile.write_text("hi")
    mine = tmp_path / "fm.yaml"
    mine.write_text(f"extends: smoke\nmodel: {{name: '{afile}'}}\n")
    assert main(["profiles", "show", str(mine)]) == 2
    assert capsys.readouterr().err == (
        f"error: profile {mine}: model.name: model '{afile}': {afile} is a file, not a model "
        "folder; give a zoo name (tiny-random, smollm2-135m, tiny-base), a local Hugging Face "
        "folder, a .gguf file or a hub id\n"
    )


def test_an_error_in_a_file_another_extends_is_named_at_that_file(tmp_path, capsys):
    """A parent's bad value was reported against the child (which never wrote it); a value the
    child sets is still the child's, and a grandchild's error names the file that wrote it."""
    parent, child, grandchild = (tmp_path / f"{n}.yaml" for n in ("parent", "child", "grand"))
    parent.write_text("extends: smoke\nmodel: {window: banana}\n")
    child.write_text("extends: parent.yaml\n")
    grandchild.write_text("extends: child.yaml\n")
    for file in (child, grandchild):
        assert main(["profiles", "show", str(file)]) == 2
        err = capsys.readouterr().err.strip()
        assert err == (f"error: profile {parent}: model.window must be an integer, got 'banana' "
                       f"(extended by {file})")  # fmt: skip
    child.write_text("extends: parent.yaml\nmodel: {window: apple}\n")
    assert main(["profiles", "show", str(grandchild)]) == 2
    assert f"error: profile {child}: model.window must be an integer, got 'apple'" in (
        capsys.readouterr().err
    )
    parent.write_text("model: {window: 256}\n")  # not a profile alone: the child completes it
    child.write_text("extends: parent.yaml\nmodel: {name: tiny-random, window: x}\n")
    assert main(["profiles", "show", str(child)]) == 2
    assert capsys.readouterr().err.startswith(f"error: profile {child}: model.window must be")
