"""Pinned behaviour of ``training/methods.py``: how the two-stage recipes count and order their
steps and streams, LongReD's total as the sum of its three terms, and that each position
transform's loss is the CE at the position ids its sampler draws for the process's share of
the global batch (checked against the student called directly at those ids); LongRecipe's
final merge with the original weights."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from train_helpers import smoke

from longred_bench.models.loading import extend, load
from longred_bench.training.methods import (
    LinearARD,
    LongReD,
    PositionTransformCE,
    SentenceGapCE,
)
from longred_bench.training.objectives import causal_lm_loss
from longred_bench.training.position_transforms import (
    pose_position_ids,
    sentence_gap_position_ids,
    sentence_starts,
)
from longred_bench.training.positions import skipped_position_ids
from longred_bench.training.streams import Batch


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _batch(rows: int, length: int, seed: int = 0) -> Batch:
    ids = torch.randint(0, 200, (rows, length), generator=_gen(seed))
    return Batch(ids, torch.ones_like(ids, dtype=torch.bool))


@pytest.fixture(scope="module")
def models() -> tuple[torch.nn.Module, torch.nn.Module, int]:
    """The random tiny model as teacher and its 2x PI extension as student, with sharpened
    queries and keys so that attention, and through it the position ids, move the outputs."""
    teacher = load("tiny-random").model.eval()
    with torch.no_grad():
        for name, param in teacher.named_parameters():
            if name.endswith(("q_proj.weight", "k_proj.weight")):
                param.mul_(8.0)
    student = extend(teacher, "pi:factor=2").eval()
    return teacher, student, teacher.config.max_position_embeddings


# ---------------------------------------------------------------- steps and stages


def test_longrecipe_reads_long_rows_then_replays_short_ones() -> None:
    """``steps`` steps of the long stream, then ``replay_steps`` of the short one: both in the
    run's step count, in that order, each stream with its own rows."""
    cfg = smoke("longrecipe", steps=3, replay_steps=2)
    assert SentenceGapCE.total_steps(cfg) == 5
    assert SentenceGapCE.stages(cfg) == [(("long",), 3), (("short",), 2)]
    assert SentenceGapCE.stream_steps(cfg) == {"long": 3, "short": 2}
    method = SentenceGapCE(cfg, None, None, {"long": 2, "short": 3}, 64)
    assert [method.rows(step) for step in range(5)] == [{"long": 2}] * 3 + [{"short": 3}] * 2
    no_replay = smoke("longrecipe", steps=3, replay_steps=0)
    assert SentenceGapCE.total_steps(no_replay) == 3
    assert SentenceGapCE.stages(no_replay) == [(("long",), 3)]


def test_linearard_runs_its_long_ce_stage_before_distilling() -> None:
    """``cpt_steps`` steps of long-text CE first, then ``steps`` of s2l distillation."""
    cfg = smoke("linearard", steps=3, cpt_steps=2)
    assert LinearARD.total_steps(cfg) == 5
    assert LinearARD.stages(cfg) == [(("long",), 2), (("s2l",), 3)]
    assert LinearARD.stream_mix(cfg) == {"s2l": 1.0, "long": 1.0}
    assert LinearARD.stream_mix(smoke("linearard", steps=3, cpt_steps=0)) == {"s2l": 1.0}
    method = LinearARD(cfg, None, None, {"long": 1, "s2l": 4}, 64, (1,))
    assert [method.rows(step) for step in range(5)] == [{"long": 1}] * 2 + [{"s2l": 4}] * 3


# ---------------------------------------------------------------- LongReD


def test_longreds_total_is_the_sum_of_its_weighted_terms(models) -> None:
    """``loss = ce_long + a1 short + a2 s2l`` when a step reads all three streams."""
    teacher, student, window = models
    cfg = smoke("longred")
    method = LongReD(cfg, student, teacher, {"long": 1, "short": 2, "s2l": 2}, window,
                     layers=(1,), generator=_gen(0), target_window=2 * window)  # fmt: skip
    batches = {"long": _batch(1, 2 * window), "short": _batch(2, 32, 1), "s2l": _batch(2, window)}
    with torch.no_grad():
        terms = {k: float(v) for k, v in method.losses(batches, 0).items()}
    assert terms["ce_long"] > 0 and terms["short"] > 0 and terms["s2l"] > 0
    expected = terms["ce_long"] + cfg.a1 * terms["short"] + cfg.a2 * terms["s2l"]
    assert terms["loss"] == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("rank", [0, 1])
def test_the_s2l_student_reads_its_share_of_the_drawn_skipped_ids(models, rank: int) -> None:
    """Process ``rank`` of 2: the student's final hidden states at rows ``rank`` of the global
    draw of skipped ids (CREAM's sampler, from the method's generator), against the teacher's at
    ordinary positions: ``1 - mean cos``."""
    teacher, student, window = models
    cfg = smoke("longred", sampler="cream", cream_sigma=1.5)
    rows = 2
    method = LongReD(cfg, student, teacher, {"s2l": rows}, window, layers=(1,),
                     generator=_gen(3), rank=rank, world=2, target_window=4 * window)  # fmt: skip
    b = _batch(rows, window, seed=4)
    with torch.no_grad():
        got = float(method.losses({"s2l": b}, 0)["s2l"])
        drawn = skipped_position_ids(window, 4 * window, 2 * rows, sampler="cream",
                                     generator=_gen(3), cream_sigma=1.5)  # fmt: skip
        mine = drawn[rank * rows : (rank + 1) * rows]
        kw = {"attention_mask": b.mask, "output_hidden_states": True}
        s = student(b.ids, position_ids=mine, **kw).hidden_states[-1].double()
        t = teacher(b.ids, **kw).hidden_states[-1].double()
        expected = 1.0 - float(F.cosine_similarity(s, t, dim=-1).mean())
        uniform = skipped_position_ids(window, 4 * window, 2 * rows, generator=_gen(3))
        s_uniform = student(b.ids, position_ids=uniform[rank * rows : (rank + 1) * rows], **kw)
        other = 1.0 - float(
            F.cosine_similarity(s_uniform.hidden_states[-1].double(), t, dim=-1).mean()
        )
    assert got == pytest.approx(expected, rel=1e-5)
    assert abs(expected - other) > 1e-4  # the sampler's ids matter here


# ---------------------------------------------------------------- position transforms


@pytest.mark.parametrize("rank", [0, 1])
def test_poses_ce_is_at_its_share_of_the_drawn_ids(models, rank: int) -> None:
    """PoSE's loss is the student's CE at rows ``rank`` of the ids drawn for the global batch
    (2 processes), not at ordinary positions."""
    _, student, window = models
    rows, length, target = 2, 48, 2 * window
    method = PositionTransformCE(smoke("pose"), student, None, {"long": rows}, window,
                                 generator=_gen(5), rank=rank, world=2,
                                 target_window=target)  # fmt: skip
    b = _batch(rows, length, seed=6)
    with torch.no_grad():
        terms = method.losses({"long": b}, 0)
        ids = pose_position_ids(length, target, 2 * rows, generator=_gen(5))
        mine = ids[rank * rows : (rank + 1) * rows]
        logits = student(b.ids, attention_mask=b.mask, position_ids=mine).logits
        expected = float(causal_lm_loss(logits, b.ids, b.mask))
        plain = float(causal_lm_loss(student(b.ids).logits, b.ids, b.mask))
    assert float(terms["ce_long"]) == pytest.approx(expected, rel=1e-5)
    assert float(terms["loss"]) == float(terms["ce_long"])
    assert abs(expected - plain) > 1e-4


def test_longrecipes_ce_is_at_the_sentence_gap_ids(models) -> None:
    """LongRecipe's loss on long rows is the CE at the sentence-gap ids drawn from the rows'
    sentence starts (after a delimiter token); its replay rows are read at ordinary ids."""
    _, student, window = models
    target, length = 2 * window, 40
    method = SentenceGapCE(smoke("longrecipe"), student, None, {"long": 2, "short": 2}, window,
                           generator=_gen(7), target_window=target)  # fmt: skip
    method.delimiters = torch.tensor([13, 46])
    b = _batch(2, length, seed=8)
    b.ids[:, 5::6] = 46  # a sentence ends every six tokens
    with torch.no_grad():
        got = float(method.losses({"long": b}, 0)["ce_long"])
        starts = sentence_starts(b.ids, method.delimiters)
        assert int(starts.sum()) > 4
        ids = sentence_gap_position_ids(starts, target, generator=_gen(7))
        logits = student(b.ids, attention_mask=b.mask, position_ids=ids).logits
        expected = float(causal_lm_loss(logits, b.ids, b.mask))
        plain = float(causal_lm_loss(student(b.ids).logits, b.ids, b.mask))
        replay = method.losses({"short": b}, 3)
    assert got == pytest.approx(expected, rel=1e-5)
    assert abs(expected - plain) > 1e-4
    assert sorted(replay) == ["ce_replay", "loss"]
    assert float(replay["ce_replay"]) == pytest.approx(plain, rel=1e-5)


@pytest.mark.parametrize("rank", [0, 1])
def test_longrecipes_process_takes_its_rows_of_the_global_draw(
    models, monkeypatch: pytest.MonkeyPatch, rank: int
) -> None:
    """Two processes: the sentence starts and ids are drawn for the gathered global batch (this
    process's rows at ``rank``), and the process trains on its own rows' ids."""
    import longred_bench.training.methods as methods

    _, student, window = models
    target, length, rows = 2 * window, 30, 2
    b = _batch(rows, length, seed=9)
    other = _batch(rows, length, seed=10)
    for batch in (b, other):
        batch.ids[:, 4::5] = 46
    every = [other.ids, b.ids] if rank else [b.ids, other.ids]
    monkeypatch.setattr(methods, "_gather_rows", lambda ids, world: torch.cat(every))
    method = SentenceGapCE(smoke("longrecipe"), student, None, {"long": rows}, window,
                           generator=_gen(11), rank=rank, world=2,
                           target_window=target)  # fmt: skip
    method.delimiters = torch.tensor([46])
    with torch.no_grad():
        got = float(method.losses({"long": b}, 0)["ce_long"])
        starts = sentence_starts(torch.cat(every), method.delimiters)
        ids = sentence_gap_position_ids(starts, target, generator=_gen(11))
        mine = ids[rank * rows : (rank + 1) * rows]
        logits = student(b.ids, attention_mask=b.mask, position_ids=mine).logits
        expected = float(causal_lm_loss(logits, b.ids, b.mask))
    assert got == pytest.approx(expected, rel=1e-5)


# ---------------------------------------------------------------- LongRecipe's final merge


def test_longrecipes_finish_merges_with_the_original_weights() -> None:
    """``merge_weight`` x the trained weights + the rest x the original model's: in place on the
    student (returning None), or on FSDP2's gathered weights (returning them merged); an empty
    dict (FSDP2, not the main process) and ``merge_weight = 1`` keep what they are given."""
    original = load("tiny-random").model.state_dict()
    student = load("tiny-random").model
    with torch.no_grad():
        for tensor in student.state_dict().values():
            if tensor.is_floating_point():
                tensor.add_(1.0)
    floats = [k for k, v in original.items() if v.is_floating_point()]
    method = SentenceGapCE(smoke("longrecipe", merge_weight=0.25), student, None, {"long": 1}, 64)
    gathered = {k: v.clone() for k, v in student.state_dict().items()}
    assert method.finish({}) == {}
    merged = method.finish(gathered)
    assert method.finish(None) is None
    after = student.state_dict()
    for name in floats:
        torch.testing.assert_close(merged[name], original[name] + 0.25)
        torch.testing.assert_close(after[name], original[name] + 0.25)
    whole = SentenceGapCE(smoke("longrecipe", merge_weight=1.0), student, None, {"long": 1}, 64)
    assert whole.finish(gathered) is gathered
    assert whole.finish(None) is None
    for name in floats:
        torch.testing.assert_close(student.state_dict()[name], original[name] + 0.25)


# ---------------------------------------------------------------- LinearARD


def test_linearard_under_activation_checkpointing_gives_the_same_loss_and_gradient() -> None:
    """With activation checkpointing the relation KL runs after the student's forward pass: the
    loss and the gradient are those of the run without it, and the backward pass (which
    recomputes the layers) goes through."""
    teacher = load("tiny-random").model.eval()

    def loss_and_grad(checkpointing: bool) -> tuple[float, torch.Tensor]:
        student = extend(teacher, "pi:factor=2")
        student.train()
        if checkpointing:
            student.gradient_checkpointing_enable({"use_reentrant": False})
        cfg = smoke("linearard", activation_checkpointing=checkpointing)
        method = LinearARD(cfg, student, teacher, {"s2l": 2}, 256, (1, 2))
        loss = method.losses({"s2l": _batch(2, 24, seed=12)}, 0)["loss"]
        loss.backward()
        weight = student.model.layers[0].self_attn.q_proj.weight
        return float(loss), weight.grad.clone()

    plain, plain_grad = loss_and_grad(False)
    checkpointed, checkpointed_grad = loss_and_grad(True)
    assert plain > 0
    assert checkpointed == pytest.approx(plain, rel=1e-5)
    torch.testing.assert_close(checkpointed_grad, plain_grad, rtol=1e-4, atol=1e-7)
