"""A method's own settings as a nested group of the training config (``longred: {a1: 5}``,
``--set longred.a1=5``): the same config, and so the same cache key, as the flat keys; a group of
another recipe, a key outside its group and a key given both ways are one-line errors."""

from __future__ import annotations

import re

import pytest

from longred_bench.errors import UserError
from longred_bench.results import config_hash
from longred_bench.training.config import TrainConfig, resolve_config
from longred_bench.training.method_groups import grouped
from longred_bench.training.overrides import parse_set


def test_a_group_is_the_same_config_as_its_flat_keys() -> None:
    flat = TrainConfig.from_dict({"recipe": "longred", "rope": "pi:factor=2", "a1": 2.0,
                                  "sampler": "uniform"})  # fmt: skip
    nested = TrainConfig.from_dict({"recipe": "longred", "rope": "pi:factor=2",
                                    "longred": {"a1": 2.0, "sampler": "uniform"}})  # fmt: skip
    assert nested == flat and config_hash(nested.to_dict()) == config_hash(flat.to_dict())
    assert grouped(flat.to_dict(), "longred")["longred"]["sampler"] == "uniform"
    assert "a1" not in grouped(flat.to_dict(), "longred")


def test_a_plan_shows_no_other_recipes_settings() -> None:
    """A cpt plan listed LongReD's a1 and sampler, LinearARD's lora_rank and pretraining's
    tokenizer as if they were cpt's (``--set a1=3`` is refused for cpt); a key two groups share
    stays in the recipe's own."""
    cpt = grouped(TrainConfig.from_dict({"recipe": "cpt", "rope": "pi:factor=2"}).to_dict(), "cpt")
    assert not {"a1", "sampler", "lora_rank", "tokenizer", "anchors", "merge_weight"} & set(cpt)
    assert cpt["lr"] == 2e-5 and cpt["recipe"] == "cpt"
    assert cpt["copy_fraction"] == 0.0  # pretraining's, but read by every recipe with its data
    merge = TrainConfig.from_dict({"recipe": "merge", "merge_with": "x", "merge_weight": 0.3})
    shown = grouped(merge.to_dict(), "merge")
    assert shown["merge"] == {"merge_with": "x", "merge_weight": 0.3}
    assert "anchors" not in shown and "longrecipe" not in shown


def test_set_names_a_setting_in_its_group_over_the_recipes_own() -> None:
    cfg = resolve_config("longred", profile="smoke", overrides=parse_set(["longred.a1=7",
                                                                          "lr=1e-4"]))  # fmt: skip
    assert cfg.a1 == 7.0 and cfg.a2 == 10.0 and cfg.lr == 1e-4  # a2: the recipe's group
    assert resolve_config("longred", profile="smoke").a1 == 5.0


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"recipe": "cpt", "rope": "pi:factor=2", "longred": {"a1": 2.0}},
         "config group longred is for recipe longred, not cpt"),
        ({"recipe": "longred", "rope": "pi:factor=2", "longred": {"lr": 1.0}},
         "config longred.lr is not a setting of longred"),
        ({"recipe": "longred", "rope": "pi:factor=2", "a1": 1.0, "longred": {"a1": 2.0}},
         "config a1 is given twice"),
    ],
)  # fmt: skip
def test_a_misplaced_group_key_is_one_line(data, message) -> None:
    with pytest.raises(UserError, match=message):
        TrainConfig.from_dict(data)


@pytest.mark.parametrize(("key", "value", "message"), [
    ("lr", float("nan"), "config lr must hold finite numbers"),
    ("grad_clip", float("inf"), "config grad_clip must hold finite numbers"),
    ("betas", [0.9, float("nan")], "config betas must hold finite numbers"),
    ("rope", "bogus", "unknown RoPE extension method 'bogus'"),
    ("rope", "pi:factor=nan", "must be a finite number"),
])  # fmt: skip
def test_a_config_value_that_cannot_train_is_refused_when_built(key, value, message) -> None:
    """NaN passed every comparison (lr=nan reached torch's optimizer), and a bad rope spec
    was found at model load, after the run's folder was written."""
    with pytest.raises(UserError, match=re.escape(message)):
        resolve_config("cpt", profile="smoke", overrides={key: value})


def test_set_takes_a_json_rope_spec_as_the_spec_it_is() -> None:
    """YAML read it as a mapping, refused as 'must be of type str'."""
    spec = '{"method": "pi", "factor": 4}'
    assert parse_set([f"rope={spec}"]) == {"rope": spec}
    cfg = resolve_config("cpt", profile="smoke", overrides=parse_set([f"rope={spec}"]))
    assert cfg.rope == spec


@pytest.mark.parametrize(("recipe", "overrides", "message"), [
    ("linearard", {"lora_rank": -1}, "config lora_rank must be >= 0 (0: no LoRA) and lora_alpha"),
    ("linearard", {"lora_alpha": 0}, " and 0)"),
    ("longred", {"top_m": -2}, "config top_m must be >= 0 (got -2)"),
    ("cpt", {"betas": [2, 0.9]}, "config betas must be two numbers in [0, 1) (got [2, 0.9])"),
    ("cpt", {"betas": [0.9]}, "config betas must be two numbers in [0, 1)"),
    ("cpt", {"weight_decay": -1}, "config weight_decay must be >= 0 (got -1.0)"),
    ("cpt", {"heldout_every": 1, "heldout_windows": 0}, "heldout_windows >= 1 where it is set"),
    ("cpt", {"heldout_every": -1}, "config heldout_every must be >= 0 (0: never)"),
    ("longred", {"cream_sigma": 0}, "config cream_sigma must be > 0 (got 0)"),
    ("cpt", {"min_lr_ratio": 2}, "config min_lr_ratio must be in [0, 1] (got 2.0)"),
    ("linearard", {"trainable": "attention"}, "trains q/k/v adapters alone: drop it, or set "
     "lora_rank=0"),
])  # fmt: skip
def test_values_refused_only_after_the_model_loaded_are_refused_when_built(
    recipe, overrides, message
) -> None:
    """peft, torch's optimizer, the layer choice and the held-out reshape refused these with a
    traceback after the model had loaded, a config.yaml left behind; cream_sigma=0 passed the
    dry run; min_lr_ratio=2 was reported with lr's value; trainable=attention beside LoRA
    trained the base weights of q/k/v and o whole, without a word."""
    with pytest.raises(UserError, match=re.escape(message)):
        resolve_config(recipe, profile="smoke", overrides=overrides)
    resolve_config(recipe, profile="smoke", overrides={"heldout_every": 0, "heldout_windows": 0})
    resolve_config(
        "linearard", profile="smoke", overrides={"trainable": "attention", "lora_rank": 0}
    )
