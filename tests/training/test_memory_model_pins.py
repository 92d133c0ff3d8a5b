"""Pinned behaviour of ``training/memory_model.py``: what each wrapper holds (FSDP2's gathered
layers, DDP's buckets, autocast's bf16 copies), what a LinearARD run (each of its two stages)
and a LongReD teacher keep, the loss's transient at the edges, activation offload on the CPU and
with a small head, the layer backward under checkpointing, the CPU optimizer step, and the GiB
breakdown's rounding.
The expected figures are the module docstring's formulas, written out at a small shape."""

from __future__ import annotations

from train_helpers import smoke

from longred_bench.training.memory_model import (
    GIB,
    MemoryEstimate,
    estimate_train_memory,
    layer_activation_bytes,
    loss_bytes,
    trainable_params,
)
from longred_bench.training.plan import micro_rows, stream_lengths
from longred_bench.training.shapes import ModelShape

WINDOW = 256


def _shape(**overrides) -> ModelShape:
    """A two-layer Llama shape small enough to reason about."""
    fields = {"vocab": 300, "hidden": 64, "intermediate": 160, "layers": 2, "heads": 4,
              "kv_heads": 2, "tied": True}  # fmt: skip
    return ModelShape("t", **{**fields, **overrides})


def _tokens(cfg, world: int = 1) -> dict[str, int]:
    """Tokens of each stream one of ``world`` processes holds in a micro-step."""
    rows, lengths = micro_rows(cfg, WINDOW), stream_lengths(cfg, WINDOW)
    return {name: -(-r // world) * lengths[name] for name, r in rows.items()}


def _root(s: ModelShape) -> int:
    return s.params - s.layers * s.layer_params


def test_the_gib_breakdown_rounds_to_hundredths_and_keeps_the_words() -> None:
    """Each figure in GiB to two decimals; the transient's kind and ``unsplit`` as given."""
    est = MemoryEstimate(int(1.234 * GIB), 0, 0, 0, 0, 0, int(0.5 * GIB), "lm loss",
                         int(2.006 * GIB), unsplit="rows do not split")  # fmt: skip
    got = est.gib()
    assert got["params"] == 1.23 and got["peak"] == 2.01 and got["transient"] == 0.5
    assert got["transient_kind"] == "lm loss" and got["unsplit"] == "rows do not split"


def test_a_lora_rank_outside_linearard_adds_nothing_and_trains_everything() -> None:
    """Only LinearARD builds LoRA adapters: ``lora_rank`` on cpt trains every parameter."""
    s = _shape()
    assert trainable_params(s, smoke("cpt", lora_rank=4)) == (0, s.params)


def test_the_loss_of_no_token_takes_no_memory() -> None:
    """A recipe whose student computes no language-model loss has no loss transient, whatever
    the loss's form (the chunked form's weight gradient included)."""
    s = _shape()
    for form in ("plain", "chunked", "liger"):
        assert loss_bytes(s, 0, form, 2) == 0


def test_the_plain_loss_in_bf16_adds_the_bf16_logits() -> None:
    """fp32 logits, their log-softmax and its gradient, plus the logits in the compute dtype
    where that is not fp32."""
    s = _shape()
    assert loss_bytes(s, 100, "plain", 4) == 3 * 100 * 300 * 4
    assert loss_bytes(s, 100, "plain", 2) == 3 * 100 * 300 * 4 + 100 * 300 * 2


def test_autocast_copies_weights_only_below_fp32() -> None:
    """One process under autocast keeps bf16 copies of every weight but the norms; in fp32
    nothing is copied."""
    s = _shape()
    fp32 = estimate_train_memory(s, smoke("cpt", dtype="float32"), window=WINDOW)
    assert fp32.wrappers == 0
    bf16 = estimate_train_memory(s, smoke("cpt", dtype="bfloat16"), window=WINDOW)
    assert bf16.wrappers == 2 * (s.params - s.hidden * (2 * s.layers + 1))


def test_ddp_holds_a_gradient_bucket_of_every_parameter() -> None:
    """Two DDP processes in fp32: fp32 buckets as large as the model, nothing sharded."""
    s = _shape()
    cfg = smoke("cpt", dtype="float32", distributed="ddp")
    est = estimate_train_memory(s, cfg, 2, window=WINDOW)
    assert est.wrappers == 4 * s.params and est.params == 4 * s.params


def test_fsdp_gathers_the_root_and_two_layers_in_the_compute_dtype() -> None:
    """FSDP2 with its own mixed precision: the root and two layers gathered in bf16, the
    weights sharded over the processes."""
    s = _shape()
    cfg = smoke("cpt", dtype="bfloat16", distributed="fsdp", mixed_precision="fsdp")
    est = estimate_train_memory(s, cfg, 4, window=WINDOW)
    assert est.wrappers == 2 * (_root(s) + 2 * s.layer_params)
    assert est.params == 4 * s.params // 4


def test_fsdp_mixed_precision_wraps_even_one_process() -> None:
    """One process with ``mixed_precision: fsdp`` is still wrapped by FSDP2 (it holds the
    gathered copies); one process under autocast is not."""
    s = _shape()
    fsdp = smoke("cpt", dtype="bfloat16", distributed="fsdp", mixed_precision="fsdp")
    assert estimate_train_memory(s, fsdp, 1, window=WINDOW).wrappers == 2 * (
        _root(s) + 2 * s.layer_params
    )
    autocast = smoke("cpt", dtype="float32", distributed="fsdp")
    assert estimate_train_memory(s, autocast, 1, window=WINDOW).wrappers == 0


def test_linearard_counts_its_distillation_stage_alone() -> None:
    """LinearARD: only the s2l stream's tokens, no LM head, the q/k/v of the compared layers
    kept for the student and the teacher; the teacher's weights in the compute dtype (a small
    vocabulary: its CE stage, counted apart, holds less)."""
    s = _shape(vocab=50)
    cfg = smoke("linearard", ard_layers=[1], dtype="float32", lora_rank=0, cpt_steps=1)
    tokens = _tokens(cfg)
    assert set(tokens) == {"s2l", "long"}  # the CPT stage's rows are not counted alongside
    n = tokens["s2l"]
    qkv = (s.heads + 2 * s.kv_heads) * s.head_dim * 4
    est = estimate_train_memory(s, cfg, device="cpu", window=WINDOW)
    assert est.activations == n * s.layers * layer_activation_bytes(s, 4) + n * 1 * qkv
    assert est.teacher == 4 * s.params + n * 1 * qkv
    every = estimate_train_memory(s, cfg.replace(ard_layers=()), device="cpu", window=WINDOW)
    assert every.teacher - est.teacher == n * (s.layers - 1) * qkv
    assert every.activations - est.activations == n * (s.layers - 1) * qkv


def test_a_sharded_teacher_is_divided_over_the_processes() -> None:
    """``teacher_placement: shard`` splits the teacher's weights; ``replicate`` keeps them whole
    (the hidden states the loss keeps are the same)."""
    s = _shape()
    cfg = smoke("longred", dtype="float32", top_m=0)
    whole = estimate_train_memory(s, cfg, 2, device="cpu", window=WINDOW)
    split = estimate_train_memory(s, cfg.replace(teacher_placement="shard"), 2, device="cpu",
                                  window=WINDOW)  # fmt: skip
    assert whole.teacher - split.teacher == 4 * s.params - 4 * s.params // 2


def test_checkpointed_layers_recompute_one_layer_in_the_backward() -> None:
    """With activation checkpointing the layer backward holds one layer's saved tensors again
    (recomputed) and its MLP's gradients, at the largest stream."""
    s = _shape()
    cfg = smoke("cpt", dtype="float32", lm_loss="chunked", activation_checkpointing=True)
    biggest = max(_tokens(cfg).values())
    est = estimate_train_memory(s, cfg, device="cpu", window=WINDOW)
    assert est.transient_kind == "layer backward"
    assert est.transient == biggest * (layer_activation_bytes(s, 4) + 4 * 3 * s.intermediate)


def test_offload_moves_nothing_on_the_cpu() -> None:
    """On the CPU ``activation_offload`` keeps the saved activations where they are."""
    s = _shape()
    cfg = smoke("cpt", activation_checkpointing=True)
    kept = estimate_train_memory(s, cfg, device="cpu", window=WINDOW)
    off = estimate_train_memory(s, cfg.replace(activation_offload=True), device="cpu",
                                window=WINDOW)  # fmt: skip
    assert off.host == 0 and off == kept


def test_offload_without_a_head_keeps_the_largest_layer_input_on_the_device() -> None:
    """LinearARD computes no LM head: with offload the device holds the largest layer input
    brought back (plus the q/k/v the KL keeps), the host every saved layer input."""
    s = _shape()
    cfg = smoke("linearard", activation_checkpointing=True, lora_rank=0, dtype="bfloat16")
    n = _tokens(cfg)["s2l"]
    est = estimate_train_memory(s, cfg.replace(activation_offload=True), window=WINDOW)
    qkv = n * s.layers * 2 * (s.heads + 2 * s.kv_heads) * s.head_dim
    assert est.host == n * s.layers * 2 * s.hidden
    assert est.activations == n * 2 * s.hidden + qkv


def test_the_cpu_optimizer_step_holds_the_embeddings_twice() -> None:
    """On the CPU AdamW steps one tensor at a time: its transient is the largest one, the
    embeddings, twice in fp32; on CUDA one fp32 tensor per trained parameter."""
    s = _shape(vocab=60000, layers=1)
    cfg = smoke("cpt", dtype="float32", lm_loss="chunked", long_len=64, tokens_per_step=64,
                micro_tokens=64)  # fmt: skip
    cpu = estimate_train_memory(s, cfg, device="cpu", window=64)
    assert cpu.transient_kind == "optimizer step"
    assert cpu.transient == 8 * s.vocab * s.hidden
    assert cpu.peak == cpu.params + cpu.optimizer + cpu.grads + 8 * s.vocab * s.hidden


def test_linearards_ce_stage_counts_where_it_holds_more_than_its_distillation() -> None:
    """Its CE stage (``cpt_steps``) was not counted: the plain loss's logits over the long rows
    were missing from the peak on the CPU; the larger of its two stages' peaks is taken."""
    s = _shape(vocab=30000)
    distill_only = smoke("linearard", dtype="float32", lora_rank=0)
    both = distill_only.replace(cpt_steps=2)
    plain = estimate_train_memory(s, distill_only, device="cpu", window=WINDOW)
    staged = estimate_train_memory(s, both, device="cpu", window=WINDOW)
    long_tokens = _tokens(both)["long"]
    assert staged.transient_kind == "lm loss"
    assert staged.transient == loss_bytes(s, long_tokens, "plain", 4)
    assert staged.teacher == 4 * s.params  # its weights, without the q/k/v it compares
    assert staged.peak > plain.peak
    # a distillation that holds more than the CE stage is the peak, as without cpt_steps
    small = _shape(vocab=50)
    assert estimate_train_memory(small, both, device="cpu", window=WINDOW) == (
        estimate_train_memory(small, distill_only, device="cpu", window=WINDOW)
    )
