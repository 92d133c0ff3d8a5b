"""``training.shapes`` and ``training.memory_model``: parameter counts of the named shapes, the
per-layer activation bytes against what autograd really keeps, the breakdown's rules, and the
model against a measured peak at a small shape (CPU, fp32)."""

from __future__ import annotations

import pytest
import torch
from script_loader import load_script
from train_helpers import smoke

from longred_bench.training.memory_model import (
    estimate_train_memory,
    layer_activation_bytes,
    loss_bytes,
)
from longred_bench.training.shapes import ModelShape, random_model, shape


def test_named_shapes_have_the_published_parameter_counts() -> None:
    assert shape("smollm2-135m").params == 134_515_008
    assert shape("llama-1b").params == 1_235_814_400
    assert shape("llama3-8b").params == 8_030_261_248
    small = shape("smollm2-135m", 2)
    assert small.params == sum(p.numel() for p in random_model(small).parameters())


def test_a_shape_reads_back_from_its_transformers_config() -> None:
    for s in (shape("smollm2-135m"), shape("llama3-8b", 1)):
        assert ModelShape.from_config(s.llama_config(), s.name) == s


def test_flops_count_matmuls_and_causal_attention() -> None:
    s = shape("llama3-8b")
    dense = 2 * (s.params - s.vocab * s.hidden - s.hidden * (2 * s.layers + 1))
    assert s.forward_flops_per_token(1) == pytest.approx(dense + s.layers * 4 * 4096, rel=1e-12)
    assert s.train_flops_per_token(8192) == 3 * s.forward_flops_per_token(8192)


def test_layer_activations_are_what_autograd_keeps() -> None:
    s = ModelShape("t", vocab=300, hidden=64, intermediate=160, layers=1, heads=4, kv_heads=2,
                   tied=True)  # fmt: skip
    model = random_model(s).train()
    layer = model.model.layers[0]
    weights = {p.untyped_storage().data_ptr() for p in model.parameters()}
    tokens = 96
    x = torch.randn(1, tokens, 64, requires_grad=True)
    positions = torch.arange(tokens)[None]
    cos_sin = model.model.rotary_emb(x, positions)
    shared = {t.untyped_storage().data_ptr() for t in cos_sin}
    kept: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        ptr = t.untyped_storage().data_ptr()
        if ptr not in weights and ptr not in shared:
            kept[ptr] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        layer(x, attention_mask=None, position_embeddings=cos_sin, position_ids=positions)
    assert sum(kept.values()) == tokens * layer_activation_bytes(s, 4)


def test_breakdown_rules() -> None:
    s = shape("smollm2-135m", 4)
    cpt = smoke("cpt", long_len=1024, tokens_per_step=1024)
    plain = estimate_train_memory(s, cpt, device="cpu", window=256)
    assert plain.params == 4 * s.params and plain.optimizer == 2 * plain.params
    assert plain.transient_kind == "lm loss"
    assert plain.transient == loss_bytes(s, 1024, "plain", 4) == 3 * 1024 * s.vocab * 4
    chunked = estimate_train_memory(s, cpt.replace(lm_loss="chunked"), device="cpu", window=256)
    assert chunked.peak < plain.peak
    ckpt = cpt.replace(activation_checkpointing=True)
    assert estimate_train_memory(s, ckpt, device="cpu").activations < plain.activations
    fsdp = cpt.replace(distributed="fsdp")
    sharded = estimate_train_memory(s, fsdp, 4, device="cpu", window=256)
    assert sharded.params == 4 * s.params // 4 and sharded.wrappers > 0
    assert plain.teacher == 0
    assert estimate_train_memory(s, smoke("longred"), device="cpu", window=256).teacher > 0


@pytest.mark.integration
def test_model_is_within_15_percent_of_a_measured_peak() -> None:
    bench = load_script("bench_memory_model")
    got = bench.measured("smollm2-135m", 2, "cpt", "plain", False, 1024)
    shape_runs = load_script("shape_runs")
    cfg = shape_runs.shape_config("cpt", 1024, lm_loss="plain")
    model = estimate_train_memory(shape("smollm2-135m", 2), cfg, device="cpu", window=256)
    assert model.peak / 2**20 == pytest.approx(got["peak_mib"], rel=0.15)


def test_what_trains_is_what_a_built_model_leaves_trainable() -> None:
    from peft import LoraConfig, get_peft_model

    from longred_bench.training.build import freeze_all_but_attention
    from longred_bench.training.memory_model import trainable_params

    s = shape("smollm2-135m", 2)
    trained = lambda m: sum(p.numel() for p in m.parameters() if p.requires_grad)  # noqa: E731
    lora_cfg = smoke("linearard", lora_rank=4)
    lora = get_peft_model(random_model(s), LoraConfig(
        r=4, target_modules=["q_proj", "k_proj", "v_proj"], lora_dropout=0.0))  # fmt: skip
    added = sum(p.numel() for p in lora.parameters()) - s.params
    assert trainable_params(s, lora_cfg) == (added, trained(lora)) and added > 0
    attention = random_model(s)
    freeze_all_but_attention(attention)
    assert trainable_params(s, smoke("cpt", trainable="attention")) == (0, trained(attention))
    assert trainable_params(s, smoke("cpt")) == (0, s.params)
    full = estimate_train_memory(s, smoke("linearard"), device="cpu", window=256)
    adapted = estimate_train_memory(s, lora_cfg, device="cpu", window=256)
    assert adapted.grads == 4 * added and adapted.optimizer == 8 * added < full.optimizer


def test_a_benchmark_run_trains_what_the_memory_model_counts() -> None:
    from longred_bench.training.memory_model import trainable_params

    shape_runs = load_script("shape_runs")
    s = shape("smollm2-135m", 1)
    for recipe in ("cpt", "linearard"):  # linearard: LoRA on q/k/v (its recipe's lora_rank)
        cfg = shape_runs.shape_config(recipe, 256)
        run = shape_runs.build(s, cfg, "cpu", torch.float32)
        trained = sum(p.numel() for g in run.optimizer.param_groups for p in g["params"])
        assert trained == trainable_params(s, cfg)[1], recipe
    assert cfg.lora_rank and trained < s.params // 10


def test_adamw_steps_on_cuda_take_one_fp32_tensor_per_trained_parameter() -> None:
    """The step's transient measured on an H200 (reports/bench/h200/step_memory_cpt.jsonl:
    4,714 MiB for a 1.24B-parameter model): one fp32 tensor per trained parameter."""
    s = shape("llama-1b")
    cfg = smoke("cpt", long_len=8192, tokens_per_step=8192, micro_tokens=8192,
                activation_checkpointing=True, distributed="fsdp", mixed_precision="fsdp",
                dtype="bfloat16")  # fmt: skip
    est = estimate_train_memory(s, cfg, 1, device="cuda", window=2048)
    assert est.transient_kind == "optimizer step"
    assert est.transient == est.grads == 4 * s.params
