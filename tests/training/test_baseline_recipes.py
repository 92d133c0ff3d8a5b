"""LongReD Table 7's baselines: ``attention-only`` (only the attention projections train) and
``merge`` (a trained extended model interpolated with the original), and the config keys they
add, which stay out of cache keys at their defaults."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from train_helpers import smoke

from longred_bench.errors import UserError
from longred_bench.jobs.train import run_training as train
from longred_bench.training.config import TrainConfig


def test_trainable_field_is_left_out_of_cache_keys_at_its_default() -> None:
    """``trainable`` came after runs were cached: at ``all`` it is not in ``to_dict`` (so no key
    changed); at ``attention`` it is, and the attention-only recipe sets it."""
    cpt = smoke("cpt")
    assert "trainable" not in cpt.to_dict() and cpt.trainable == "all"
    pet = smoke("attention-only")
    assert pet.to_dict()["trainable"] == "attention"
    assert TrainConfig.from_dict(pet.to_dict()) == pet
    with pytest.raises(UserError, match="trainable='mlp' is not one of all, attention"):
        smoke("cpt", trainable="mlp")


@pytest.mark.integration
def test_attention_only_changes_only_the_attention_projections(tmp_path: Path) -> None:
    from longred_bench.models.loading import load

    final = train(smoke("attention-only", steps=2, lr=1e-2), tmp_path / "pet", progress=False)
    before = load("tiny-random").model.state_dict()
    after = load(str(final)).model.state_dict()
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    attention = {k for k in before if any(f"self_attn.{p}." in k for p in
                                          ("q_proj", "k_proj", "v_proj", "o_proj"))}  # fmt: skip
    assert attention and changed == attention


def test_merge_weights_by_hand_and_mismatches() -> None:
    from longred_bench.training.merge import merge_weights

    original = {"w": torch.tensor([0.0, 2.0]), "b": torch.tensor([1.0])}
    trained = {"w": torch.tensor([4.0, 6.0]), "b": torch.tensor([3.0])}
    merged = merge_weights(original, trained, 0.25)
    assert merged["w"].tolist() == [1.0, 3.0] and merged["b"].tolist() == [1.5]
    assert merge_weights(original, trained, 1.0)["w"].tolist() == [4.0, 6.0]
    # a student on the training device, the original loaded on the CPU (meta stands for CUDA)
    on_device = merge_weights(original, {k: v.to("meta") for k, v in trained.items()}, 0.25)
    assert {v.device.type for v in on_device.values()} == {"meta"}
    with pytest.raises(UserError, match="do not have the same weights"):
        merge_weights(original, {"w": trained["w"]}, 0.5)
    with pytest.raises(UserError, match=r"w has shape \(2,\) in the original and \(3,\)"):
        merge_weights(original, {**trained, "w": torch.zeros(3)}, 0.5)
    with pytest.raises(UserError, match="recipe merge needs merge_with"):
        smoke("merge")
    with pytest.raises(UserError, match="merge_weight must be in"):
        smoke("merge", merge_with="x", merge_weight=1.5)
    with pytest.raises(UserError, match="merge_with is for recipe merge, not cpt"):
        smoke("cpt", merge_with="x")


@pytest.mark.integration
def test_merge_interpolates_a_trained_model_with_its_original(tmp_path: Path) -> None:
    from longred_bench.jobs.units import finished_run
    from longred_bench.models.loading import load

    cpt = train(smoke("cpt", steps=2, lr=1e-2), tmp_path / "cpt", progress=False)
    final = train(smoke("merge", merge_with=str(cpt), merge_weight=0.25), tmp_path / "m",
                  progress=False)  # fmt: skip
    merged, trained = load(str(final)).model, load(str(cpt)).model
    original = load("tiny-random").model.state_dict()
    assert merged.config.rope_parameters == trained.config.rope_parameters  # extended RoPE
    for name, tensor in merged.state_dict().items():
        expected = 0.25 * trained.state_dict()[name] + 0.75 * original[name]
        torch.testing.assert_close(tensor, expected)
    cfg = smoke("merge", merge_with=str(cpt), merge_weight=0.25)
    assert "merge_weight" in cfg.to_dict() and "trainable" not in cfg.to_dict()
    info = json.loads((tmp_path / "m" / "run.json").read_text())
    assert info["tokens"] == 0 and info["merge_weight"] == 0.25
    # A merge is a finished run for the run cache (run.json, metrics, final/).
    assert finished_run(tmp_path / "m") == {
        "steps": 0,
        "tokens": 0,
        "seconds": info["seconds"],
        "dir": str(tmp_path / "m"),
    }
    # A merge into a folder holding another run wrote over its final/ and records; refused now,
    # with nothing written. The same merge again is a finished run (test_resume_finished.py).
    before = (cpt / "model.safetensors").read_bytes()
    with pytest.raises(UserError, match=r"holds a cpt run of another config: give the merge"):
        train(smoke("merge", merge_with=str(cpt), merge_weight=0.5), tmp_path / "cpt",
              progress=False)  # fmt: skip
    assert (cpt / "model.safetensors").read_bytes() == before
    with pytest.raises(UserError, match="holds a merge run of another config"):
        train(smoke("merge", merge_with=str(cpt), merge_weight=0.5), tmp_path / "m",
              progress=False)  # fmt: skip
    with pytest.raises(UserError, match="holds this run, finished"):
        train(cfg, tmp_path / "m", progress=False)


def test_init_is_for_a_linearard_student_at_an_extension() -> None:
    with pytest.raises(UserError, match=r"init .* is for recipe linearard with rope=SPEC, not cpt"):
        smoke("cpt", init="x")
    with pytest.raises(UserError, match="without rope"):
        smoke("linearard", init="x", rope=None)
    assert "init" not in smoke("linearard").to_dict()  # absent at its default: old keys kept


@pytest.mark.integration
def test_linearard_student_starts_from_a_trained_checkpoint(tmp_path: Path) -> None:
    """The student is ``init``'s weights (a CPT run at the same extension), the teacher the
    original model; a checkpoint at another extension is refused in one line."""
    from longred_bench.models.loading import load

    rope = smoke("linearard").rope
    cpt = train(smoke("cpt", steps=2, lr=1e-2, rope=rope), tmp_path / "cpt", progress=False)
    final = train(smoke("linearard", steps=1, init=str(cpt)), tmp_path / "ard", progress=False)
    student, source = load(str(final)).model.state_dict(), load(str(cpt)).model.state_dict()
    original = load("tiny-random").model.state_dict()
    name = next(k for k in student if k.endswith("mlp.down_proj.weight"))
    torch.testing.assert_close(student[name], source[name])  # LoRA on q/k/v: the MLP is CPT's
    assert not torch.equal(student[name], original[name])
    other = train(smoke("cpt", steps=1, rope="abf:theta=4e4"), tmp_path / "abf", progress=False)
    with pytest.raises(UserError, match=r"init .* is not 'tiny-random' at rope=") as info:
        train(smoke("linearard", steps=1, init=str(other)), tmp_path / "bad", progress=False)
    assert "\n" not in str(info.value)
    from longred_bench.cli import main

    argv = ["train", "--recipe", "linearard", "--profile", "smoke", "--set", f"init={other}"]
    for more in (["--dry-run"], ["--out", str(tmp_path / "bad2")]):  # the dry run passed it
        assert main([*argv, *more]) == 2
    assert not (tmp_path / "bad2").exists()  # refused before the run's folder was written
