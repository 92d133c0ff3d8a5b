"""A profile's hub model or its offline fallback: the hub's model where the hub gives it, else
the fallback, said in one line; the choice becomes every unit's model (smol's keys offline are
the Instruct weights' keys, as before the fallback existed); a fallback must be offline."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from longred_bench.errors import UserError
from longred_bench.models import choice, names
from longred_bench.profiles import load_profile


@pytest.fixture
def fresh_choice():
    choice.chosen_model.cache_clear()
    names.hub_has_model.cache_clear()
    yield
    choice.chosen_model.cache_clear()
    names.hub_has_model.cache_clear()


def _hub(monkeypatch: pytest.MonkeyPatch, has: bool) -> list[str]:
    """A reachable hub whose repository check answers ``has``; the ids asked."""
    import huggingface_hub

    class _Connection:
        def close(self) -> None:
            pass

    asked: list[str] = []

    def repo_exists(self, repo_id: str, **kwargs: object) -> bool:
        asked.append(repo_id)
        return has

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr("socket.create_connection", lambda *a, **k: _Connection())
    monkeypatch.setattr(huggingface_hub.HfApi, "repo_exists", repo_exists)
    return asked


def test_offline_takes_the_fallback_in_one_line(fresh_choice, capsys) -> None:
    prof = choice.choose_model(load_profile("smol"))
    assert prof.model.name == "smollm2-135m" and prof.model.fallback is None
    assert prof.model.window == 8192 and prof.model.layers == 30
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["warning: model HuggingFaceTB/SmolLM2-135M is not used (HF_HUB_OFFLINE is "
                   "set); its offline fallback smollm2-135m runs instead (model.fallback: "
                   "remove it to be refused instead)"]  # fmt: skip
    choice.choose_model(load_profile("smol"))
    assert capsys.readouterr().err == ""  # said once a process


def test_a_reachable_hub_with_the_model_runs_it(fresh_choice, monkeypatch, capsys) -> None:
    asked = _hub(monkeypatch, has=True)
    prof = choice.choose_model(load_profile("smol"))
    assert prof.model.name == "HuggingFaceTB/SmolLM2-135M"
    assert asked == ["HuggingFaceTB/SmolLM2-135M"] and capsys.readouterr().err == ""


def test_a_hub_without_the_model_takes_the_fallback(fresh_choice, monkeypatch, capsys) -> None:
    _hub(monkeypatch, has=False)
    assert choice.choose_model(load_profile("smol")).model.name == "smollm2-135m"
    assert "the hub has no model 'HuggingFaceTB/SmolLM2-135M'" in capsys.readouterr().err


def test_the_choice_names_the_training_runs_model(fresh_choice, monkeypatch) -> None:
    from longred_bench.training.config import resolve_config

    assert resolve_config("cpt", profile="smol").model == "smollm2-135m"
    _hub(monkeypatch, has=True)
    choice.chosen_model.cache_clear()
    assert resolve_config("cpt", profile="smol").model == "HuggingFaceTB/SmolLM2-135M"


def test_the_table_units_differ_by_the_model_chosen(fresh_choice, monkeypatch) -> None:
    from longred_bench.reproduce.registry import get_spec

    spec = get_spec("table3")

    def keys() -> set[str]:
        ctx = spec.resolve(choice.choose_model(load_profile("smol")), progress=False)
        return {s.key for s in spec.steps(ctx)}

    offline = keys()
    _hub(monkeypatch, has=True)
    choice.chosen_model.cache_clear()
    assert keys().isdisjoint(offline)  # a cache never mixes the base and Instruct models


def test_a_profile_without_a_fallback_is_unchanged(fresh_choice, no_hub) -> None:
    prof = load_profile("tiny")
    assert choice.choose_model(prof) is prof


@pytest.fixture
def no_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the hub was asked")

    monkeypatch.setattr("socket.create_connection", refuse)


@pytest.mark.parametrize(
    ("fallback", "message"),
    [("org/model", "looks like a hub id; give an offline model"),
     ("./no-such-folder", "does not exist")],
)  # fmt: skip
def test_a_fallback_must_be_offline(tmp_path: Path, fallback: str, message: str) -> None:
    path = tmp_path / "p.yaml"
    model = {"name": "org/base", "fallback": fallback, "window": 8192, "layers": 30}
    path.write_text(yaml.safe_dump({"extends": "smol", "model": model}))
    with pytest.raises(UserError, match=rf"model.fallback '{fallback}' {message}"):
        load_profile(path)


def _local_model(folder: Path, window: int = 4096, layers: int = 16) -> Path:
    """A Hugging Face model folder as a run reads it first: its config."""
    from transformers import LlamaConfig

    config = LlamaConfig(max_position_embeddings=window, num_hidden_layers=layers, hidden_size=64,
                         intermediate_size=128, num_attention_heads=4, vocab_size=256)  # fmt: skip
    config.save_pretrained(folder)
    return folder


def test_a_local_model_runs_itself_with_no_hub_asked(fresh_choice, no_hub, tmp_path, capsys):
    folder = _local_model(tmp_path / "my-llama")
    assert choice.chosen_model(str(folder), "smollm2-135m") == str(folder)
    assert choice.chosen_model("tiny-base", "smollm2-135m") == "tiny-base"  # a zoo name
    assert capsys.readouterr().err == ""


def test_a_file_naming_its_own_model_inherits_no_fallback(fresh_choice, no_hub, tmp_path):
    folder = _local_model(tmp_path / "my-llama")
    own = tmp_path / "own.yaml"
    own.write_text(yaml.safe_dump({"extends": "smol", "model": {"name": str(folder),
                                   "window": 4096, "layers": 16}}))  # fmt: skip
    prof = load_profile(own)
    assert prof.model.fallback is None
    assert choice.choose_model(prof).model.name == str(folder)
    deeper = tmp_path / "deeper.yaml"  # only the depth changed: smol's model and fallback stay
    deeper.write_text(yaml.safe_dump({"extends": "smol", "model": {"layers": 30}}))
    assert load_profile(deeper).model.fallback == "smollm2-135m"
    same = tmp_path / "same.yaml"  # smol's model restated: its fallback stays
    same.write_text(yaml.safe_dump({"extends": "smol", "model": {
        "name": "HuggingFaceTB/SmolLM2-135M", "window": 8192, "layers": 30}}))  # fmt: skip
    assert load_profile(same).model.fallback == "smollm2-135m"


def test_a_fallback_of_another_shape_is_refused_as_such(tmp_path) -> None:
    from longred_bench.reproduce.engine import check_model

    path = tmp_path / "p.yaml"
    model = {"name": "org/base", "fallback": "tiny-base", "window": 4096, "layers": 16}
    path.write_text(yaml.safe_dump({"extends": "smol", "model": model}))
    prof = choice.choose_model(load_profile(path))  # offline: tiny-base runs instead
    assert prof.model.name == "tiny-base"
    with pytest.raises(UserError, match=r"model.fallback tiny-base \(run because the hub cannot "
                       r"give org/base\) has window 256 and 4 layers, not the stated 4096 and "
                       r"16: a fallback must have the model's shape"):  # fmt: skip
        check_model(prof, fallback_for="org/base")


def test_a_fallback_of_the_windows_but_another_depth_is_refused_as_such(tmp_path) -> None:
    """The shape a fallback must share is its window and its depth: tiny-base (256 tokens, 4
    layers) standing in for a model of 256 tokens and 16 layers is refused as a fallback."""
    from longred_bench.reproduce.engine import check_model

    path = tmp_path / "p.yaml"
    model = {"name": "org/base", "fallback": "tiny-base", "window": 256, "layers": 16}
    path.write_text(yaml.safe_dump({"extends": "smol", "model": model}))
    prof = choice.choose_model(load_profile(path))
    assert prof.model.name == "tiny-base"
    with pytest.raises(UserError, match=r"has window 256 and 4 layers, not the stated 256 and "
                       r"16: a fallback must have the model's shape"):  # fmt: skip
        check_model(prof, fallback_for="org/base")


def test_a_profiles_stated_depth_is_checked_against_its_model(tmp_path) -> None:
    """``model.layers`` (which plans choose distillation layers by) must be the model's own
    depth: a wrong one is refused in one line naming the key and the right value."""
    from longred_bench.reproduce.engine import check_model

    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({"extends": "tiny", "model": {"layers": 5}}))
    with pytest.raises(UserError, match=r"model.layers is 5, but tiny-base has 4: set "
                       r"model.layers: 4"):  # fmt: skip
        check_model(load_profile(path))
    check_model(load_profile("tiny"))


def test_a_unit_run_with_a_fallback_of_another_shape_stops_before_any_work(
    tmp_path, monkeypatch, capsys
) -> None:
    from longred_bench.cli import main

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "p.yaml"
    model = {"name": "org/base", "fallback": "tiny-base", "window": 4096, "layers": 16}
    path.write_text(yaml.safe_dump({"extends": "smoke", "model": model}))
    assert main(["reproduce", "table1", "--profile", str(path), "--unit", "drift_zero-shot"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (f"error: profile {path}: model.fallback tiny-base (run because the hub "
                       "cannot give org/base) has window 256 and 4 layers, not the stated 4096 "
                       "and 16: a fallback must have the model's shape; remove model.fallback, "
                       "or give org/base as a local folder")  # fmt: skip
    assert not (tmp_path / "cache" / "runs").exists()
