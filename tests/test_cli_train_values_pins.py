"""Training values refused in one line before a run's model loads, and the values next to
them that pass: layer numbers against the model's depth (1 to its last layer, both ends
included; unchecked where the model's config is not at hand), and a list given to a key of
one value, which the config's own check names."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from cli_helpers import one_line_error as _one_line_error

from longred_bench.cli import main
from longred_bench.cli.train_values import check_train_values
from longred_bench.errors import UserError

DRY = ["train", "--profile", "smoke", "--dry-run"]
"""A dry run of the smoke profile, whose model (tiny-random) has four decoder layers."""


@pytest.mark.parametrize(
    ("recipe", "item"),
    [("longred", "layers=[1,4]"), ("longred", "layers=[1]"), ("linearard", "ard_layers=[4]")],
)
def test_layers_from_the_first_to_the_models_last_pass(capsys, recipe, item) -> None:
    """Layer numbers count from 1 to the model's depth, both ends included."""
    assert main([*DRY, "--recipe", recipe, "--set", item]) == 0
    capsys.readouterr()


@pytest.mark.parametrize(
    ("recipe", "item", "message"),
    [
        ("longred", "layers=[0,2]", "config layers=[0, 2]: layer(s) [0] out of range; the "
         "model has layers 1..4"),
        ("longred", "layers=[1,5]", "config layers=[1, 5]: layer(s) [5] out of range; the "
         "model has layers 1..4"),
        ("linearard", "ard_layers=[5]", "config ard_layers=[5]: layer(s) [5] out of range"),
    ],
)  # fmt: skip
def test_layers_past_either_end_of_the_model_are_one_line(capsys, recipe, item, message) -> None:
    """A layer below 1 or above the model's depth is named with the range the model has."""
    _one_line_error(capsys, [*DRY, "--recipe", recipe, "--set", item], message)


def test_layers_of_a_model_whose_config_is_not_at_hand_are_left_to_the_run() -> None:
    """Without the model's config (a hub id not fetched) its depth is not known: no layer is
    refused here, and nothing fails comparing with an unknown depth."""
    cfg = SimpleNamespace(dtype="auto", model="nosuch-org/nosuch-model", layers=(99,),
                          ard_layers=(0,))  # fmt: skip
    check_train_values(cfg)
    known = SimpleNamespace(dtype="auto", model="tiny-random", layers=(99,), ard_layers=())
    with pytest.raises(UserError, match=r"layer\(s\) \[99\] out of range"):
        check_train_values(known)


def test_a_list_for_a_key_of_one_value_is_the_configs_own_one_line(capsys) -> None:
    """Only list keys have their elements checked by type; a list given to a key of one value
    (``steps``) passes to the config's own check, which names the key and its type."""
    _one_line_error(capsys, [*DRY, "--recipe", "cpt", "--set", "steps=[1,2]"],
                    "config steps=[1, 2] must be of type int")  # fmt: skip
