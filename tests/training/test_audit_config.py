"""Where a training config's values come from, in order: the recipe's file, the profile (its
model, its hardware, its ``training.<recipe>`` keys), a config file, ``--set``; what a
profile's hardware becomes in a run; and what ``--set`` reads."""

from __future__ import annotations

import pytest

from longred_bench.errors import UserError
from longred_bench.training.config import resolve_config
from longred_bench.training.overrides import parse_set


def _profile(tmp_path, body: str, name: str = "mine"):
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"extends: smoke\n{body}")
    return path


def test_each_source_of_a_value_overrides_the_one_before(tmp_path) -> None:
    recipe = resolve_config("cpt", profile="tiny")
    assert recipe.weight_decay == 0.1  # the recipe's own (the profile leaves it)
    prof = _profile(tmp_path, "training: {cpt: {weight_decay: 0.03, grad_clip: 0.7}}\n")
    assert resolve_config("cpt", profile=prof).weight_decay == 0.03
    config = tmp_path / "run.yaml"
    config.write_text("weight_decay: 0.04\nseed: 3\n")
    cfg = resolve_config("cpt", profile=prof, config_file=config)
    assert (cfg.weight_decay, cfg.grad_clip, cfg.seed) == (0.04, 0.7, 3)
    cfg = resolve_config("cpt", profile=prof, config_file=config,
                         overrides={"weight_decay": 0.05})  # fmt: skip
    assert (cfg.weight_decay, cfg.seed, cfg.profile) == (0.05, 3, "mine")


def test_a_profiles_hardware_reaches_the_runs_that_train_a_pretrained_model(tmp_path) -> None:
    prof = _profile(
        tmp_path,
        "hardware: {device: cpu, dtype: float32, fsdp: true, activation_checkpointing: true, "
        "activation_offload: true}\n",
    )
    cfg = resolve_config("cpt", profile=prof)
    assert (cfg.device, cfg.dtype, cfg.distributed) == ("cpu", "float32", "fsdp")
    assert cfg.activation_checkpointing and cfg.activation_offload
    assert cfg.model == "tiny-random"  # the profile's model
    merge = resolve_config("merge", profile=prof, overrides={"merge_with": str(tmp_path)})
    assert (merge.device, merge.dtype, merge.distributed) == ("auto", "auto", "ddp")
    assert not merge.activation_checkpointing and not merge.activation_offload
    assert merge.model == "tiny-random"
    pretrain = resolve_config("pretrain", profile=prof)
    assert pretrain.model == "tiny-base" and pretrain.distributed == "ddp"  # builds its own


@pytest.mark.parametrize(
    ("section", "said"),
    [
        ("{cpt: {device: cpu}}", "training.cpt.device: set it under `hardware:`"),
        ("{cpt: {distributed: fsdp}}", "training.cpt.distributed: set it under `hardware:`"),
        ("{cpt: {profile: other}}", "training.cpt.profile is not a training key"),
        ("{cpt: {recipe: longred}}", "training.cpt.recipe is not a training key"),
        ("{cpt: {stepz: 3}}", "training.cpt.stepz is not a training key"),
        ("{cpx: {steps: 3}}", "training.cpx is not a recipe"),
    ],
)
def test_a_training_section_refuses_what_is_not_a_recipes_training_key(
    tmp_path, section, said
) -> None:
    prof = _profile(tmp_path, f"training: {section}\n")
    with pytest.raises(UserError, match=said.replace("`", ".")):
        resolve_config("cpt", profile=prof)


def test_set_reads_values_as_yaml() -> None:
    got = parse_set(["teacher=none", "init=null", "lr=1e-4", "layers=[1, 4]", "longred.a1=5",
                     'rope={"method": "pi", "factor": 4}'])  # fmt: skip
    assert got["teacher"] is None and got["init"] is None
    assert got["lr"] == 1e-4 and got["layers"] == [1, 4]
    assert got["longred"] == {"a1": 5}
    assert got["rope"] == '{"method": "pi", "factor": 4}'  # the JSON spec, as --rope takes it


@pytest.mark.parametrize("item", ["lr", "=5", " =5"])
def test_set_refuses_an_item_without_a_key(item) -> None:
    with pytest.raises(UserError, match="is not KEY=VALUE"):
        parse_set([item])


BASE = {"recipe": "cpt", "rope": "pi:factor=2"}


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"stepz": 3}, "stepz"),
        ({"steps": True}, "config steps=True must be of type int"),
        ({"lr": float("nan")}, "config lr must hold finite numbers"),
        ({"betas": [0.9, float("inf")]}, "config betas must hold finite numbers"),
        ({"mix_long": 1.0, "mix_short": -0.5}, "mix_long/mix_short/mix_s2l must be >= 0"),
        ({"mix_long": 0.0}, "mix_long/mix_short/mix_s2l must be >= 0 and not all 0"),
        ({"retrieval_fraction": 1.0}, "retrieval_fraction must be in [0, 1)"),
        ({"steps": 0}, "config steps must be >= 1"),
        ({"steps": None}, "config steps has no value"),
        ({"rope": None}, "recipe cpt extends the window: set rope=SPEC"),
        ({"recipe": "longred", "rope": None}, "recipe longred extends the window"),
        ({"recipe": "control"}, "recipe control keeps the original RoPE"),
    ],
)
def test_a_value_that_cannot_train_is_refused_in_one_line(changes, said) -> None:
    from longred_bench.training.config import TrainConfig

    with pytest.raises(UserError) as caught:
        TrainConfig.from_dict({**BASE, **changes})
    assert said in str(caught.value)


def test_a_single_value_of_a_list_setting_is_a_list_of_one_and_replace_applies_changes() -> None:
    from longred_bench.training.config import TrainConfig

    cfg = TrainConfig.from_dict({**BASE, "recipe": "longred", "layers": 3, "steps": 4.0})
    assert cfg.layers == (3,) and cfg.steps == 4 and isinstance(cfg.steps, int)
    assert cfg.replace(steps=9, layers=[1, 2]).steps == 9
    assert cfg.replace(layers=[1, 2]).layers == (1, 2)
    assert cfg.mix == {"long": 1.0}  # the streams in use, by their fractions
    assert TrainConfig.from_dict({**BASE, "mix_short": 3.0}).mix == {"long": 0.25, "short": 0.75}
