"""A teacher (or ``init``, or ``merge_with``) must have ``model``'s architecture: each of its
layer count, width, attention heads and key-value heads is compared from the configs alone; a
recipe that trains without a teacher does not read, so does not compare, one its config names."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import longred_bench.models.names as names
import longred_bench.training.model_plan as model_plan
from longred_bench.jobs.same_tokens import Mismatch, check_training_shapes

SHAPE = {"num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 4,
         "num_key_value_heads": 2}  # fmt: skip


@pytest.mark.parametrize("key", sorted(SHAPE))
def test_a_teacher_of_another_shape_is_refused_naming_what_differs(monkeypatch, key) -> None:
    configs = {"student": SimpleNamespace(**SHAPE),
               "teacher": SimpleNamespace(**{**SHAPE, key: SHAPE[key] * 2})}  # fmt: skip
    monkeypatch.setattr(names, "check_local", lambda spec: True)
    monkeypatch.setattr(model_plan, "planning_config", configs.__getitem__)
    config = {"recipe": "longred", "model": "student", "teacher": "teacher"}
    with pytest.raises(Mismatch) as caught:
        check_training_shapes(config)
    assert f"{key} {SHAPE[key] * 2} against {SHAPE[key]}" in str(caught.value)
    configs["teacher"] = SimpleNamespace(**SHAPE)
    check_training_shapes(config)  # the same shape passes


def test_a_teacher_of_a_recipe_without_one_is_not_compared(monkeypatch) -> None:
    """cpt trains without a teacher: one named in its config is not read, so not refused."""
    configs = {"student": SimpleNamespace(**SHAPE),
               "teacher": SimpleNamespace(**{**SHAPE, "hidden_size": 128})}  # fmt: skip
    monkeypatch.setattr(names, "check_local", lambda spec: True)
    monkeypatch.setattr(model_plan, "planning_config", configs.__getitem__)
    check_training_shapes({"recipe": "cpt", "model": "student", "teacher": "teacher"})
    with pytest.raises(Mismatch):
        check_training_shapes({"recipe": "linearard", "model": "student", "teacher": "teacher"})
