"""Memory of one training process, from a model shape and a training config: pure arithmetic.

:func:`estimate_train_memory` returns a :class:`MemoryEstimate`: parameters, gradients,
optimizer state, saved activations (all that the forward passes of one micro-step keep for the
backward pass), the frozen teacher, what the wrappers hold (FSDP2's gathered layers, DDP's
gradient buckets, autocast's bf16 weight copies) and the largest transient, with the peak they
make together. A dry run (``train --dry-run`` at the paper profile) prints it per GPU; the CPU
figures are checked against measured peaks by ``benchmarks/bench_memory_model.py``.

What it counts (bytes; ``N`` tokens of a micro-step on this process; ``c`` the compute dtype's
size: 2 for bf16, 4 for fp32):

- weights, gradients and AdamW's two moments in fp32 (FSDP2: divided over the processes);
  gradients and moments only of what trains (LinearARD's LoRA adapters, or the attention
  projections with ``trainable: attention``);
- the rows of each stream one process holds: a micro-step's rows over the processes, as the
  run splits them (a split the run refuses at startup is said in ``unsplit``, and counted at the
  busiest process's ``ceil(rows / processes)``);
- per decoder layer and token, the tensors autograd keeps for transformers' Llama layer with
  SDPA (measured with ``saved_tensors_hooks``, ``tests/training/test_memory_model.py``):
  ``24 D + c (2 Hq + 2 Hkv + 4 I) + 4 H`` (the two RMSNorms keep fp32 copies); with activation
  checkpointing only each layer's input, ``c D``, and one layer's worth again while it is
  recomputed;
- the language-model loss: ``plain``, the fp32 logits, their log-softmax and its gradient
  (``3 N V x 4``); ``chunked`` / ``liger``, one chunk's fp32 logits, the fp32 weight gradient
  and the hidden-state gradient;
- the teacher: its weights in the compute dtype (sharded or not) and the outputs a loss keeps;
- with ``activation_offload`` (:mod:`~longred_bench.training.offload`), the saved activations
  are host memory (``host``), and the device holds the largest one brought back at a time.

The peak is the weights, optimizer state, teacher and wrappers' copies, plus the larger of
(saved activations + the largest transient of the forward and backward passes) and
(gradients + the optimizer step's temporaries). LinearARD's stages run one at a time, each
with its teacher's weights held: with ``cpt_steps``, the peak is the larger of its long-text CE
stage's and its distillation stage's.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from longred_bench.kernels.linear_ce import default_chunk_rows
from longred_bench.training.config import TrainConfig
from longred_bench.training.plan import micro_rows, stream_lengths
from longred_bench.training.shapes import ModelShape

GIB = 2**30


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes of one process at its peak, by what holds them; ``host``: the pinned host memory
    of activation offload (not in ``peak``, which is the device's); ``unsplit``: the startup
    error of a config whose rows per micro-step do not split over the processes (the run stops
    before its first step; the figures are the busiest process's), else ``""``."""

    params: int
    grads: int
    optimizer: int
    activations: int
    teacher: int
    wrappers: int
    transient: int
    transient_kind: str
    peak: int
    host: int = 0
    unsplit: str = ""

    def gib(self) -> dict[str, float | str]:
        """The breakdown in GiB (rounded to 0.01); the transient's kind and ``unsplit`` as
        they are."""
        return {k: v if isinstance(v, str) else round(v / GIB, 2) for k, v in asdict(self).items()}


def layer_activation_bytes(s: ModelShape, compute_bytes: int) -> int:
    """Bytes autograd keeps per token for one decoder layer (module docstring)."""
    q, kv = s.heads * s.head_dim, s.kv_heads * s.head_dim
    return 24 * s.hidden + compute_bytes * (2 * q + 2 * kv + 4 * s.intermediate) + 4 * s.heads + 8


def trainable_params(s: ModelShape, cfg: TrainConfig) -> tuple[int, int]:
    """(parameters the config adds to the model, parameters it trains): LinearARD's LoRA
    adapters on q, k and v (``lora_rank``), or, with ``trainable: attention``, the attention
    projections only; otherwise nothing added and every parameter trained."""
    q, kv = s.heads * s.head_dim, s.kv_heads * s.head_dim
    if cfg.recipe == "linearard" and cfg.lora_rank:
        lora = s.layers * cfg.lora_rank * (3 * s.hidden + q + 2 * kv)
        return lora, lora
    if cfg.trainable == "attention":
        return 0, s.layers * 2 * s.hidden * (q + kv)
    return 0, s.params


def loss_bytes(s: ModelShape, tokens: int, lm_loss: str, compute_bytes: int) -> int:
    """The language-model loss's transient at ``tokens`` tokens."""
    if tokens == 0:
        return 0
    if lm_loss == "plain":
        extra = tokens * s.vocab * compute_bytes if compute_bytes != 4 else 0
        return 3 * tokens * s.vocab * 4 + extra
    rows = default_chunk_rows(tokens, s.vocab)
    return rows * s.vocab * 4 + s.vocab * s.hidden * 4 + tokens * s.hidden * compute_bytes


def _resolved(cfg: TrainConfig, device: str) -> tuple[int, str, bool]:
    """(compute bytes, LM-loss form, autocast on) for ``cfg`` on ``device``."""
    dtype = cfg.dtype if cfg.dtype != "auto" else ("bfloat16" if device == "cuda" else "float32")
    compute = 4 if dtype == "float32" else 2
    lm_loss = cfg.lm_loss
    if lm_loss == "auto":
        lm_loss = "chunked" if device == "cuda" else "plain"
    return compute, lm_loss, compute != 4 and cfg.mixed_precision == "autocast"


def _stream_tokens(
    cfg: TrainConfig, window: int, world: int, stage: str = "s2l"
) -> tuple[dict[str, int], str]:
    """(tokens of each stream one process holds in a micro-step, the startup check's error
    where the rows do not split over the ``world`` processes, else ``""``). The rows are split
    as the run splits them; where they cannot be, the busiest process's share is counted
    (``ceil(rows / world)``), never a smaller one. LinearARD's stages run one at a time: its
    ``stage``'s stream alone (``s2l``, the distillation; ``long``, its CE stage)."""
    from longred_bench.errors import UserError
    from longred_bench.training.plan import check_row_split

    lengths = stream_lengths(cfg, window)
    rows = micro_rows(cfg, window)
    try:
        check_row_split(rows, world)
        unsplit = ""
    except UserError as exc:
        unsplit = str(exc)
    if cfg.recipe == "linearard":  # its stages run one at a time
        rows = {stage: rows[stage]}
    return {name: -(-r // world) * lengths[name] for name, r in rows.items()}, unsplit


def estimate_train_memory(
    model_shape: ModelShape,
    cfg: TrainConfig,
    world_size: int = 1,
    *,
    device: str = "cuda",
    window: int | None = None,
) -> MemoryEstimate:
    """Peak memory of one of ``world_size`` processes training ``model_shape`` as ``cfg`` says
    (recipe, lengths and mix, ``tokens_per_step`` / ``micro_tokens``, ``distributed``,
    ``mixed_precision``, ``dtype``, ``activation_checkpointing``, ``activation_offload``,
    ``lm_loss``, ``teacher_placement``), on ``device`` (``cuda`` or ``cpu``; offload moves
    nothing on the CPU); ``window``: the model's original window (default the shape's).
    LinearARD with ``cpt_steps``: the larger of its two stages' peaks (its long-text CE stage
    holds the teacher's weights too, and the CE's transient instead of the q/k/v it compares)."""
    stages = ("s2l", "long") if cfg.recipe == "linearard" and cfg.cpt_steps else ("s2l",)
    estimates = [_estimate(model_shape, cfg, world_size, device, window, stage)
                 for stage in stages]  # fmt: skip
    return max(estimates, key=lambda e: e.peak)


def _estimate(
    s: ModelShape, cfg: TrainConfig, world_size: int, device: str, window: int | None, stage: str
) -> MemoryEstimate:
    """:func:`estimate_train_memory` of one stage (LinearARD's ``s2l`` or ``long``; any other
    recipe's one stage is ``s2l``)."""
    c, lm_loss, autocast = _resolved(cfg, device)
    window = window or s.window
    tokens, unsplit = _stream_tokens(cfg, window, world_size, stage)
    distill = cfg.recipe == "linearard" and stage == "s2l"  # the relation-KL stage
    sharded = cfg.distributed == "fsdp" and (world_size > 1 or cfg.mixed_precision == "fsdp")
    shard = world_size if sharded else 1
    added, trained = trainable_params(s, cfg)
    params = 4 * (s.params + added) // shard
    grads = 4 * trained // shard
    optimizer = 2 * grads
    wrappers = 0
    if sharded:  # the root (embeddings, head) stays gathered; two layers gathered at a time
        root = s.params - s.layers * s.layer_params
        wrappers = (c if cfg.mixed_precision == "fsdp" else 4) * (root + 2 * s.layer_params)
    elif world_size > 1:  # DDP's gradient buckets
        wrappers = 4 * s.params
    if autocast:  # bf16 copies of the weights, cached for the forward and backward passes
        wrappers += 2 * (s.params - s.hidden * (2 * s.layers + 1))
    student = sum(tokens.values())
    per_layer = layer_activation_bytes(s, c)
    head_tokens = 0 if distill else tokens.get("long", 0) if cfg.recipe == "longred" else student
    if cfg.activation_checkpointing:
        activations = student * (s.layers * c * s.hidden)
        recompute = max(tokens.values()) * per_layer
    else:
        activations = student * s.layers * per_layer
        recompute = 0
    activations += head_tokens * 12 * s.hidden
    host = 0
    if cfg.activation_offload and device == "cuda":  # they wait on the host; one comes back
        host = activations
        activations = max(head_tokens * 12 * s.hidden, max(tokens.values()) * c * s.hidden)
    if distill:  # the student's q/k/v of the compared layers, kept for the KL
        compared = len(cfg.ard_layers) or s.layers
        activations += student * compared * c * (s.heads + 2 * s.kv_heads) * s.head_dim
    layer_backward = recompute + max(tokens.values()) * c * 3 * s.intermediate
    ce_tokens = head_tokens if cfg.recipe != "longrecipe" else student
    candidates = {
        "lm loss": loss_bytes(s, ce_tokens, lm_loss, c),
        "layer backward": layer_backward,
    }
    teacher = 0
    if cfg.recipe in ("longred", "linearard"):
        teacher_shard = world_size if cfg.teacher_placement == "shard" else 1
        teacher = c * s.params // teacher_shard
        if cfg.recipe == "longred":
            kept = tokens.get("short", 0) * (cfg.top_m + 1) + tokens.get("s2l", 0)
            teacher += kept * s.hidden * c
        elif distill:  # the teacher's q/k/v of the compared layers
            layers = len(cfg.ard_layers) or s.layers
            teacher += tokens["s2l"] * layers * c * (s.heads + 2 * s.kv_heads) * s.head_dim
    kind = max(candidates, key=candidates.__getitem__)
    transient = candidates[kind]
    # AdamW's temporaries: foreach on CUDA (one fp32 tensor per trained parameter, measured
    # on an H200: reports/bench/h200/step_memory_cpt.jsonl), one tensor at a time on CPU (the
    # largest, the embeddings, twice)
    step = grads if device == "cuda" else 8 * s.vocab * s.hidden
    backward_peak = activations + transient
    step_peak = grads + step
    if step_peak > backward_peak:
        kind, transient = "optimizer step", step
    peak = params + optimizer + teacher + wrappers + max(backward_peak, step_peak)
    return MemoryEstimate(params, grads, optimizer, activations, teacher, wrappers, transient,
                          kind, peak, host, unsplit)  # fmt: skip
