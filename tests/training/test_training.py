"""The training module: config resolution, streams, objectives (unit) and every recipe end to end
at the smoke profile on the random tiny model (integration): resume, NaN stop, frozen teacher,
the final Hugging Face directory, and the one-line errors on bad input."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from train_helpers import smoke

from longred_bench.errors import UserError
from longred_bench.jobs.train import run_training as train
from longred_bench.models.loading import extended_config
from longred_bench.training.build import schedule_factor
from longred_bench.training.config import RECIPES, resolve_config
from longred_bench.training.objectives import (
    causal_lm_loss,
    hidden_cosine_loss,
    relation_kl_loss,
)
from longred_bench.training.overrides import parse_set
from longred_bench.training.streams import WindowStream


def _losses(out: Path) -> list[float]:
    lines = (out / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line)["loss"] for line in lines]


# ---------------------------------------------------------------- unit


def test_config_rejects_unknown_keys_and_bad_values() -> None:
    with pytest.raises(UserError, match=r"unknown training config key.*lerning_rate"):
        smoke("cpt", lerning_rate=1.0)
    with pytest.raises(UserError, match="sampler='gauss'"):
        smoke("longred", sampler="gauss")
    with pytest.raises(UserError, match="unknown recipe 'yarn-ft'"):
        resolve_config("yarn-ft", profile="smoke")
    with pytest.raises(UserError, match="set rope=SPEC"):
        smoke("cpt", rope=None)
    with pytest.raises(UserError, match="control keeps the original RoPE"):
        smoke("control", rope="pi:factor=2")


def test_config_values_take_their_field_types() -> None:
    cfg = smoke("cpt", steps=2.0, lr=1, a1=3)
    assert (cfg.steps, cfg.lr, cfg.a1) == (2, 1.0, 3.0)
    assert isinstance(cfg.steps, int) and isinstance(cfg.lr, float)
    with pytest.raises(UserError, match=r"config steps='abc' must be of type int"):
        smoke("cpt", steps="abc")
    with pytest.raises(UserError, match=r"config steps=2.5 must be of type int"):
        smoke("cpt", steps=2.5)
    with pytest.raises(UserError, match=r"config lr=True must be of type float"):
        smoke("cpt", lr=True)
    # `--set steps=` read "steps=None must be of type int"
    with pytest.raises(UserError, match=r"^config steps has no value: give it an integer \(steps="):
        smoke("cpt", steps=None)


def test_profiles_and_overrides_resolve_in_order(tmp_path: Path) -> None:
    base = smoke("longred")
    assert (base.a1, base.a2, base.model) == (5.0, 10.0, "tiny-random")
    assert base.mix == pytest.approx({"long": 0.5, "short": 0.375, "s2l": 0.125})
    user = tmp_path / "user.yaml"
    user.write_text("a1: 2.0\na2: 15.0\n")
    cfg = resolve_config(
        "longred", profile="smoke", config_file=user, overrides=parse_set(["a2=7", "layers=[1]"])
    )
    assert (cfg.a1, cfg.a2, cfg.layers) == (2.0, 7.0, (1,))
    assert parse_set(["lr=1e-4", "rope=none"]) == {"lr": 1e-4, "rope": None}
    with pytest.raises(UserError, match="is not KEY=VALUE"):
        parse_set(["lr"])


def test_schedule_warms_up_then_decays_to_floor() -> None:
    cfg = smoke("cpt", schedule="cosine", warmup_steps=2, min_lr_ratio=0.1)
    factors = [schedule_factor(cfg, s, 10) for s in range(10)]
    assert factors[0] == pytest.approx(0.5) and factors[1] == pytest.approx(1.0)
    assert all(a >= b for a, b in itertools.pairwise(factors[1:]))
    assert schedule_factor(cfg, 10, 10) == pytest.approx(0.1)
    assert schedule_factor(smoke("cpt"), 7, 10) == 1.0


def test_decay_steps_give_a_constant_tail_that_a_longer_run_shares() -> None:
    cfg = smoke("cpt", schedule="cosine", warmup_steps=2, min_lr_ratio=0.1, decay_steps=6)
    short = [schedule_factor(cfg, s, 10) for s in range(10)]
    longer = [schedule_factor(cfg, s, 15) for s in range(15)]
    assert longer[:10] == short  # the 1.5x run is this run continued
    assert short[6:] == pytest.approx([0.1] * 4) and longer[10:] == pytest.approx([0.1] * 5)
    assert short[5] > 0.1  # still decaying before decay_steps
    with pytest.raises(UserError, match=r"decay_steps .* must exceed warmup_steps"):
        smoke("cpt", schedule="cosine", warmup_steps=2, decay_steps=2)
    with pytest.raises(UserError, match="needs a decaying schedule"):
        smoke("cpt", schedule="constant", decay_steps=5)


def test_a_warm_up_longer_than_the_run_is_refused() -> None:
    steps = smoke("cpt").steps
    assert smoke("cpt", warmup_steps=steps).warmup_steps == steps  # ends at the last step
    with pytest.raises(UserError, match=rf"warmup_steps \({steps + 1}\) exceeds the run's {steps}"):
        smoke("cpt", warmup_steps=steps + 1)
    # LinearARD's CPT stage runs at lr too; LongRecipe's replay runs at its own rate
    ard = smoke("linearard", cpt_steps=3, warmup_steps=steps + 3)
    assert ard.warmup_steps == steps + 3
    with pytest.raises(UserError, match="exceeds the run's"):
        smoke("longrecipe", replay_steps=4, replay_lr=1e-5, warmup_steps=steps + 1)


def test_stream_resumes_and_splits_the_global_batch() -> None:
    ids = torch.arange(40).view(10, 4)
    mask = torch.ones_like(ids, dtype=torch.bool)
    a = WindowStream("s", ids, mask, seed=3)
    first = [a.next(3).ids for _ in range(2)]
    state = a.state_dict()
    rest = [a.next(3).ids for _ in range(5)]  # crosses two epoch boundaries
    b = WindowStream("s", ids, mask, seed=3)
    b.load_state_dict(state)
    assert all(torch.equal(x, b.next(3).ids) for x in rest)
    # Two processes of 2 rows draw exactly the rows one process of 4 rows draws.
    whole = WindowStream("s", ids, mask, seed=5).next(4).ids
    r0 = WindowStream("s", ids, mask, seed=5).next(2, rank=0, world=2).ids
    r1 = WindowStream("s", ids, mask, seed=5).next(2, rank=1, world=2).ids
    assert torch.equal(torch.cat([r0, r1]), whole)
    assert not torch.equal(first[0], first[1])
    with pytest.raises(UserError, match="the data changed"):
        WindowStream("s", ids[:5], mask[:5], seed=3).load_state_dict(state)


def test_causal_lm_loss_matches_cross_entropy_of_shifted_tokens() -> None:
    torch.manual_seed(0)
    logits = torch.randn(2, 5, 7)
    ids = torch.randint(0, 7, (2, 5))
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], dtype=torch.bool)
    expected = torch.cat(
        [
            torch.nn.functional.cross_entropy(logits[0, :4], ids[0, 1:], reduction="none"),
            torch.nn.functional.cross_entropy(logits[1, :2], ids[1, 1:3], reduction="none"),
        ]
    ).mean()
    assert causal_lm_loss(logits, ids, mask) == pytest.approx(float(expected), rel=1e-6)
    # Left padding: the prediction made from a pad (position 1 -> 2) does not count, only those
    # from a real token to a real one (2 -> 3, 3 -> 4).
    left = torch.tensor([[0, 0, 1, 1, 1]], dtype=torch.bool)
    expected = torch.nn.functional.cross_entropy(logits[0, 2:4], ids[0, 3:5])
    assert causal_lm_loss(logits[:1], ids[:1], left) == pytest.approx(float(expected), rel=1e-6)


def test_distillation_distances_vanish_only_for_identical_inputs() -> None:
    torch.manual_seed(0)
    h = torch.randn(2, 6, 8, requires_grad=True)
    assert float(hidden_cosine_loss([h, h], [h.detach(), h.detach()], None).detach()) == 0.0
    other = torch.randn(2, 6, 8)
    loss = hidden_cosine_loss([h], [other], None)
    loss.backward()
    assert float(loss) > 0.1 and h.grad is not None and h.grad.abs().sum() > 0
    q = torch.randn(1, 2, 9, 4, requires_grad=True)
    assert float(relation_kl_loss(q, q.detach(), None)) == pytest.approx(0.0, abs=1e-6)
    teacher = torch.randn(1, 2, 9, 4).to(torch.bfloat16)
    kl = relation_kl_loss(q, teacher, None)
    kl.backward()
    assert float(kl) > 0 and q.grad.abs().sum() > 0 and q.grad.dtype == torch.float32
    # a bf16 teacher (as a trainer keeps it on GPU) is compared at the student's fp32
    assert float(kl) == pytest.approx(float(relation_kl_loss(q, teacher.float(), None)), rel=1e-6)


def test_distillation_distances_match_their_formulas_with_padding() -> None:
    """Against a per-token, per-row computation: the hidden-state loss sums ``1 - mean cosine``
    over layers and valid tokens only; the relation KL is causal, over valid rows and columns,
    and a mean over heads and valid rows."""
    torch.manual_seed(1)
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [0, 1, 1, 1, 1, 0]], dtype=torch.bool)
    student = [torch.randn(2, 6, 8) for _ in range(2)]
    teacher = [s + torch.randn(2, 6, 8) for s in student]
    teacher[1][1, ::5] = -student[1][1, ::5]  # padding that would lower the cosine if counted
    expected = 0.0
    for s, t in zip(student, teacher, strict=True):
        cosines = [
            float(torch.nn.functional.cosine_similarity(s[b, i].double(), t[b, i].double(), dim=0))
            for b in range(2) for i in range(6) if mask[b, i]
        ]  # fmt: skip
        expected += 1.0 - sum(cosines) / len(cosines)
    assert float(hidden_cosine_loss(student, teacher, mask)) == pytest.approx(expected, rel=1e-5)

    q_s, q_t = torch.randn(2, 3, 6, 4), torch.randn(2, 3, 6, 4)
    total, rows = 0.0, 0
    for b in range(2):
        for h in range(3):
            for i in range(6):
                if not mask[b, i]:
                    continue
                cols = [j for j in range(i + 1) if mask[b, j]]
                scores = [
                    (q[b, h, i].double() @ q[b, h, cols].double().T) / 2.0 for q in (q_s, q_t)
                ]  # scale 1 / sqrt(d), d = 4
                log_s, log_t = (torch.log_softmax(x, dim=-1) for x in scores)
                total += float((log_t.exp() * (log_t - log_s)).sum())
                rows += 1
    assert float(relation_kl_loss(q_s, q_t, mask)) == pytest.approx(total / rows, rel=1e-5)


# ---------------------------------------------------------------- integration


@pytest.mark.integration
@pytest.mark.parametrize("recipe", [r for r in RECIPES if r not in ("pretrain", "merge")])
def test_every_recipe_trains_and_saves_a_loadable_model(recipe: str, tmp_path: Path) -> None:
    from longred_bench.models.loading import load

    # LongRecipe's replay steps come after ``steps``; its main phase reads 3/4 of the tokens.
    cfg = smoke(recipe, steps=2, **({"replay_steps": 0} if recipe == "longrecipe" else {}))
    per_step = 1536 if recipe == "longrecipe" else 2048
    final = train(cfg, tmp_path / recipe, progress=False)
    records = [
        json.loads(x) for x in (tmp_path / recipe / "metrics.jsonl").read_text().splitlines()
    ]
    assert [r["step"] for r in records] == [1, 2]
    assert all(r["tokens"] == per_step * r["step"] for r in records)
    assert all({"loss", "lr", "seconds"} <= set(r) for r in records)
    assert (tmp_path / recipe / "curves.png").stat().st_size > 0
    loaded = load(str(final))
    config = loaded.model.config
    expected = extended_config(load("tiny-random").model.config, cfg.rope) if cfg.rope else None
    if expected is None:
        assert config.max_position_embeddings == 256
        assert config.rope_parameters == {"rope_type": "default", "rope_theta": 10000.0}
    else:
        assert config.max_position_embeddings == expected.max_position_embeddings == 1024
        assert config.rope_parameters == expected.rope_parameters


@pytest.mark.integration
def test_a_continued_run_repeats_the_run_and_a_short_run_fails_the_convergence_rule(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    from data_helpers import ensure_cached

    from longred_bench.reports.curves import read_metrics
    from longred_bench.reports.tiny_base_report import convergence
    from longred_bench.training.loop import continue_run

    ensure_cached(request, "brown", "austen", "kjv")  # held-out loss reads Brown and Austen + KJV
    cfg = smoke("pretrain", long_data="brown", tokenizer="byte", copy_warmup_steps=0,
                 schedule="cosine", warmup_steps=1, decay_steps=2, steps=6, lr=3e-3,
                 min_lr_ratio=0.5, heldout_every=3, heldout_windows=8)  # fmt: skip
    train(cfg, tmp_path / "run", progress=False)
    longer = cfg.replace(steps=9)
    continue_run(tmp_path / "run", tmp_path / "longer", longer)
    train(longer, tmp_path / "longer", resume=True, progress=False)
    train(longer, tmp_path / "whole", progress=False)  # the 1.5x run from scratch
    continued = read_metrics(tmp_path / "longer" / "metrics.jsonl")
    whole = read_metrics(tmp_path / "whole" / "metrics.jsonl")
    assert [r["loss"] for r in continued] == pytest.approx([r["loss"] for r in whole])
    assert [r["lr"] for r in continued][2:] == pytest.approx([3e-3 * 0.5] * 7)  # the tail
    rule = convergence(read_metrics(tmp_path / "run" / "metrics.jsonl"), continued)
    assert rule["brown"]["gain"] > 0.01 and rule["brown"]["converged"] is False
    with pytest.raises(UserError, match=r"more steps and nothing else changed .*lr"):
        continue_run(tmp_path / "run", tmp_path / "other", longer.replace(lr=1e-3))


@pytest.mark.integration
def test_pretrain_builds_a_model_from_scratch(tmp_path: Path) -> None:
    final = train(smoke("pretrain"), tmp_path / "pt", progress=False)
    losses = _losses(tmp_path / "pt")
    assert len(losses) == 4 and (final / "tokenizer.json").is_file()
    again = train(smoke("pretrain"), tmp_path / "pt2", progress=False)
    assert _losses(tmp_path / "pt2") == losses  # same config and seed: same run
    a, b = load_file(str(final / "model.safetensors")), load_file(str(again / "model.safetensors"))
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.integration
@pytest.mark.parametrize(
    ("recipe", "extra"),
    [("longred", {"steps": 5}), ("longrecipe", {"steps": 3, "replay_steps": 2})],
)
def test_kill_and_resume_gives_the_identical_curve(recipe, extra, tmp_path: Path) -> None:
    cfg = smoke(recipe, checkpoint_every=2, **extra)
    train(cfg, tmp_path / "whole", progress=False)
    train(cfg, tmp_path / "cut", progress=False, stop_after=3)  # killed after step 3
    assert len(_losses(tmp_path / "cut")) == 3
    with pytest.raises(UserError, match="already holds a run: pass --resume"):
        train(cfg, tmp_path / "cut", progress=False)
    train(cfg, tmp_path / "cut", resume=True, progress=False)  # resumes from step 2
    assert _losses(tmp_path / "cut") == _losses(tmp_path / "whole")
    a = load_file(str(tmp_path / "whole" / "final" / "model.safetensors"))
    b = load_file(str(tmp_path / "cut" / "final" / "model.safetensors"))
    assert all(torch.equal(a[k], b[k]) for k in a)
    with pytest.raises(UserError, match=r"another config.*lr"):
        train(cfg.replace(lr=1e-3), tmp_path / "cut", resume=True, progress=False)


@pytest.mark.integration
def test_non_finite_loss_stops_naming_the_step(tmp_path: Path, monkeypatch) -> None:
    from longred_bench.training import methods

    real = methods.CrossEntropy.losses

    def poisoned(self, batches, step):
        terms = real(self, batches, step)
        if step == 2:
            terms["loss"] = terms["loss"] * float("nan")
        return terms

    monkeypatch.setattr(methods.CrossEntropy, "losses", poisoned)
    out = tmp_path / "nan"
    with pytest.raises(UserError, match=r"non-finite loss at step 3 .*step-000002"):
        train(smoke("cpt", steps=4, checkpoint_every=2), out, progress=False)
    assert (out / "checkpoints" / "step-000002" / "student.safetensors").is_file()
    assert not (out / "final").exists()


@pytest.mark.integration
def test_teacher_is_frozen_and_never_saved(tmp_path: Path, monkeypatch) -> None:
    from longred_bench.training import build

    seen = {}
    real = build.build_run

    def spy(cfg, **kw):
        run = real(cfg, **kw)
        teacher = run.method.teacher
        seen["before"] = {k: v.clone() for k, v in teacher.state_dict().items()}
        seen["teacher"] = teacher
        seen["student_params"] = {id(p) for p in run.method.student.parameters()}
        return run

    monkeypatch.setattr("longred_bench.training.loop.build_run", spy)
    train(smoke("longred", steps=3), tmp_path / "lr", progress=False)
    teacher = seen["teacher"]
    assert not teacher.training
    assert not any(p.requires_grad for p in teacher.parameters())
    assert not {id(p) for p in teacher.parameters()} & seen["student_params"]
    after = teacher.state_dict()
    assert all(torch.equal(seen["before"][k], after[k]) for k in after)  # bit-identical
    checkpoint = next((tmp_path / "lr" / "checkpoints").glob("step-*"))
    saved = load_file(str(checkpoint / "student.safetensors"))
    assert len(saved) == len(after)  # the student only, never teacher weights beside it


@pytest.mark.integration
def test_linearard_lora_and_cpt_stage(tmp_path: Path) -> None:
    cfg = smoke("linearard", steps=2, lora_rank=4, cpt_steps=1)
    final = train(cfg, tmp_path / "ard", progress=False)
    records = [json.loads(x) for x in (tmp_path / "ard" / "metrics.jsonl").read_text().splitlines()]
    # the CPT stage comes first (LinearARD's paper distils after a lightweight CPT)
    assert "ce_long" in records[0] and {"kl_q", "kl_k", "kl_v"} <= set(records[1])
    assert {"kl_q", "kl_k", "kl_v"} <= set(records[2]) and "ce_long" not in records[2]
    weights = load_file(str(final / "model.safetensors"))
    assert not any("lora" in k for k in weights)  # merged into a plain model


@pytest.mark.integration
@pytest.mark.parametrize(
    ("recipe", "overrides", "message"),
    [
        ("cpt", {"long_len": 256}, "long_len=256 is not above the original window"),
        ("cpt", {"long_len": 2048}, "exceeds the extended window"),
        ("longred", {"layers": [0, 9]}, r"layer\(s\) \[0, 9\] out of range"),
        ("control", {"long_len": 512}, "does not extend it"),
    ],
)
def test_bad_input_is_one_line_before_compute(recipe, overrides, message, tmp_path) -> None:
    with pytest.raises(UserError, match=message) as info:
        train(smoke(recipe, **overrides), tmp_path / "bad", progress=False)
    assert "\n" not in str(info.value)
    assert not (tmp_path / "bad" / "metrics.jsonl").exists()


@pytest.mark.integration
def test_short_data_and_mismatched_teacher_are_refused(tmp_path: Path) -> None:
    from longred_bench.models.zoo import tiny_random

    text = tmp_path / "short.txt"
    text.write_text("only a few words here")
    with pytest.raises(UserError, match="fewer than one window of 512"):
        train(smoke("cpt", long_data=str(text)), tmp_path / "a", progress=False)
    model, tok = tiny_random()
    model.config.num_hidden_layers = 2
    other = type(model)(model.config)
    other.save_pretrained(tmp_path / "other")
    tok.save_pretrained(tmp_path / "other")
    with pytest.raises(UserError, match="differ in architecture"):
        train(smoke("longred", teacher=str(tmp_path / "other")), tmp_path / "b", progress=False)


def test_linearard_runs_the_decoder_stack_and_its_loss_is_unchanged(monkeypatch) -> None:
    """LinearARD reads only q, k and v, so it runs a causal LM's decoder stack without the
    vocabulary projection (a LoRA model unwrapped too); the loss and its gradients are those of
    running the whole model."""
    from peft import LoraConfig, get_peft_model

    import longred_bench.training.methods as methods
    from longred_bench.models.loading import extend, load
    from longred_bench.training.streams import Batch

    teacher = load("tiny-random").model
    assert type(methods.decoder_stack(teacher)).__name__ == "LlamaModel"
    assert not any("lm_head" in n for n, _ in methods.decoder_stack(teacher).named_parameters())
    lora = LoraConfig(r=4, target_modules=["q_proj", "k_proj", "v_proj"], lora_dropout=0.0)
    student = get_peft_model(extend(teacher, "pi:factor=2"), lora)
    stack = methods.decoder_stack(student)
    assert type(stack).__name__ == "LlamaModel" and any(
        "lora" in n for n, _ in stack.named_parameters()
    )

    cfg = smoke("linearard", lora_rank=4)
    layers = tuple(range(1, teacher.config.num_hidden_layers + 1))
    method = methods.LinearARD(cfg, student, teacher, {"s2l": 2}, 256, layers)
    ids = torch.randint(0, 200, (2, 48), generator=torch.Generator().manual_seed(0))
    batch = {"s2l": Batch(ids, torch.ones_like(ids, dtype=torch.bool))}

    def loss_and_grads() -> tuple[float, list[torch.Tensor]]:
        student.zero_grad()
        loss = method.losses(batch, 0)["loss"]
        loss.backward()
        return loss.item(), [p.grad.clone() for p in student.parameters() if p.requires_grad]

    fast, fast_grads = loss_and_grads()
    monkeypatch.setattr(methods, "decoder_stack", lambda model: model)
    whole, whole_grads = loss_and_grads()
    assert fast > 0 and fast == pytest.approx(whole, rel=1e-6)
    assert all(
        torch.allclose(a, b, atol=1e-7) for a, b in zip(fast_grads, whole_grads, strict=True)
    )


def test_linearard_under_bf16_autocast_compares_bf16_q_k_v(monkeypatch) -> None:
    """With ``mixed_precision: autocast`` in bf16 the rotary step leaves q and k in fp32 (its
    tables follow the fp32 residual stream) while v is bf16: all three reach the relation KL in
    bf16, the dtype the attention reads them in (q and k took the Triton kernel's fp32 path,
    28x CPT's cost per token at 32K on an H200, before)."""
    import longred_bench.kernels as kernels
    import longred_bench.training.methods as methods
    from longred_bench.models.loading import extend, load
    from longred_bench.training.streams import Batch

    seen = []
    chunked = kernels.relation_kl_chunked
    monkeypatch.setattr(
        kernels, "relation_kl_chunked", lambda *a, **k: seen.append(a[0].dtype) or chunked(*a, **k)
    )
    teacher = load("tiny-random").model
    student = extend(load("tiny-random").model, "pi:factor=2")
    cfg = smoke("linearard", impl="chunked")
    method = methods.LinearARD(cfg, student, teacher, {"s2l": 2}, 256, (1, 2))
    ids = torch.randint(0, 200, (2, 48), generator=torch.Generator().manual_seed(2))
    batch = {"s2l": Batch(ids, torch.ones_like(ids, dtype=torch.bool))}
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = method.losses(batch, 0)["loss"]
    loss.backward()
    assert len(seen) == 2 * len(cfg.ard_kinds) and set(seen) == {torch.bfloat16}
    assert torch.isfinite(loss) and loss > 0


def test_linearard_stops_after_the_last_layer_it_compares(monkeypatch) -> None:
    """Nothing after the last compared layer's q/k/v reaches LinearARD's loss: teacher and student
    stop there (no MLP runs when only layer 1 is compared), with the loss and gradients of the
    whole forward pass, which is what a distributed run (whose wrappers need it) still does."""
    import longred_bench.training.methods as methods
    from longred_bench.models.loading import extend, load
    from longred_bench.training.streams import Batch

    teacher = load("tiny-random").model
    student = extend(load("tiny-random").model, "pi:factor=2")
    method = methods.LinearARD(smoke("linearard"), student, teacher, {"s2l": 2}, 256, (1,))
    ids = torch.randint(0, 200, (2, 48), generator=torch.Generator().manual_seed(1))
    batch = {"s2l": Batch(ids, torch.ones_like(ids, dtype=torch.bool))}
    mlp_calls = []
    for model in (teacher, student):
        for layer in model.model.layers:
            layer.mlp.register_forward_hook(lambda *_: mlp_calls.append(1))

    def loss_and_grads() -> tuple[float, list[torch.Tensor | None]]:
        student.zero_grad()
        loss = method.losses(batch, 0)["loss"]
        loss.backward()
        return loss.item(), [p.grad for p in student.parameters()]

    early, early_grads = loss_and_grads()
    assert mlp_calls == []
    assert early_grads[-1] is None or not early_grads[-1].any()  # the final norm: not reached
    monkeypatch.setattr(methods.dist, "is_initialized", lambda: True)  # as under torchrun
    whole, whole_grads = loss_and_grads()
    assert len(mlp_calls) == 2 * teacher.config.num_hidden_layers
    assert early > 0 and early == pytest.approx(whole, rel=1e-6)
    for a, b in zip(early_grads, whole_grads, strict=True):
        if a is None or b is None:
            assert (a is None or not a.any()) and (b is None or not b.any())
        else:
            assert torch.allclose(a, b, atol=1e-7)
