"""Boundaries of the training config and its helpers, from their docstrings and messages:
checkpoints kept, LongReD's target window at exactly twice the original, snapshot steps in
LongRecipe's replay, a beta of 1 refused (AdamW refuses it), the memory model's loss and teacher
terms, and merge refusing a trained model with weights the original lacks."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from train_helpers import smoke

from longred_bench.errors import UserError


def test_save_checkpoint_keeps_the_newest_keep(tmp_path: Path) -> None:
    from longred_bench.training.checkpoint import save_checkpoint

    for step in range(1, 5):
        save_checkpoint(tmp_path, step, {"w": torch.zeros(2)}, {"step": step}, keep=2)
    kept = sorted(p.name for p in (tmp_path / "checkpoints").glob("step-*"))
    assert kept == ["step-000003", "step-000004"]


def test_a_longred_target_of_exactly_twice_the_window_is_allowed() -> None:
    from longred_bench.training.plan import check_lengths
    from longred_bench.training.positions import skipped_position_ids

    cfg = smoke("longred")
    assert cfg.mix_s2l > 0 and cfg.long_len == 512
    skipped_position_ids(256, 512, 1)
    check_lengths(cfg, 512, 256)  # "at least twice the original": 512 is twice 256
    with pytest.raises(UserError, match="at least twice"):
        check_lengths(cfg.replace(long_len=384), 384, 256)


def test_snapshot_steps_may_fall_in_longrecipes_replay() -> None:
    # replay steps are steps after ``steps`` of the same loop: 2 + 2 = 4 steps in all
    cfg = smoke("longrecipe", steps=2, replay_steps=2, snapshot_steps=[4])
    assert tuple(cfg.snapshot_steps) == (4,)
    with pytest.raises(UserError, match=r"in 1\.\.4"):
        smoke("longrecipe", steps=2, replay_steps=2, snapshot_steps=[5])


def test_a_beta_of_one_is_refused_before_anything_loads() -> None:
    with pytest.raises(ValueError):  # what the run would meet after loading the models
        torch.optim.AdamW([torch.zeros(1, requires_grad=True)], betas=(0.9, 1.0))
    with pytest.raises(UserError, match=r"betas must be two numbers in \[0, 1\)"):
        smoke("cpt", betas=[0.9, 1.0])


def _shape():
    from longred_bench.training.shapes import ModelShape

    return ModelShape("t", vocab=300, hidden=64, intermediate=160, layers=1, heads=4,
                      kv_heads=2, tied=True)  # fmt: skip


def test_the_chunked_loss_counts_the_hidden_states_gradient() -> None:
    # chunk logits + fp32 weight grad + hidden grad: 100*300*4 + 300*64*4 + 100*64*2 = 209,600
    from longred_bench.training.memory_model import loss_bytes

    assert loss_bytes(_shape(), 100, "chunked", 2) == 209_600


def test_longreds_teacher_keeps_top_m_layers_and_the_last_on_short_rows() -> None:
    # top_m KL-selected layers plus the last: top_m + 1 hidden states a short token, one an s2l
    from longred_bench.training.memory_model import estimate_train_memory
    from longred_bench.training.plan import micro_rows, stream_lengths

    shape, cfg = _shape(), smoke("longred", top_m=0)
    rows, lengths = micro_rows(cfg, 256), stream_lengths(cfg, 256)
    short, s2l = rows["short"] * lengths["short"], rows["s2l"] * lengths["s2l"]
    est = estimate_train_memory(shape, cfg, device="cpu", window=256)
    assert est.teacher == 4 * shape.params + (short + s2l) * shape.hidden * 4
    two = estimate_train_memory(shape, cfg.replace(top_m=2), device="cpu", window=256)
    assert two.teacher - est.teacher == 2 * short * shape.hidden * 4


def test_merge_refuses_a_trained_model_with_weights_the_original_lacks() -> None:
    from longred_bench.training.merge import merge_weights

    with pytest.raises(UserError, match=r"same weights .e.g. extra"):
        merge_weights({"w": torch.zeros(2)}, {"w": torch.ones(2), "extra": torch.ones(1)}, 0.5)
