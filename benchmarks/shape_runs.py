"""Training steps of a recipe on a randomly initialised model shape, for the benchmarks.

:func:`shape_config` makes a recipe's config for a row length (the recipe's own mix, the original
window a quarter of the row); :func:`build` makes the student (and the recipe's frozen teacher,
a copy in the compute dtype) of a :class:`~longred_bench.training.shapes.ModelShape` (the
student with the recipe's LoRA adapters or attention-only training, as the loop builds it), random
token rows for each stream, and the recipe's
:class:`~longred_bench.training.methods.Method`, with the student wrapped as the training loop
wraps it (:func:`~longred_bench.training.distributed.wrap_student`); :func:`train_steps` runs
optimizer steps the way the loop does (:func:`one_step`: zero the gradients, the method's loss,
backward, clip, AdamW) and returns each step's seconds. No weights, tokenizer or corpus are read.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass

import torch
from bench_common import cuda_sync

from longred_bench.training.build import adapt_student
from longred_bench.training.config import TrainConfig, resolve_config
from longred_bench.training.distributed import wrap_student
from longred_bench.training.methods import METHODS, Method
from longred_bench.training.plan import micro_rows, stream_lengths
from longred_bench.training.shapes import ModelShape, random_model
from longred_bench.training.streams import Batch


def shape_config(recipe: str, tokens: int, rows: int = 1, **settings) -> TrainConfig:
    """``recipe``'s config (its own mix, profile ``tiny``) for long rows of ``tokens`` tokens,
    ``rows`` of them a step (LinearARD: the same tokens in original-window rows), an original
    window of ``tokens // 4`` (short and s2l rows there); ``settings`` override anything."""
    base = resolve_config(recipe, profile="tiny")
    long_share = base.mix.get("long", 0.0)
    window = tokens // 4
    # LinearARD reads original-window rows only: as many tokens a step as CPT's long rows
    per_step = rows * tokens if recipe == "linearard" else round(rows * tokens / long_share)
    overrides = {
        "long_len": tokens, "short_len": window, "tokens_per_step": per_step, "micro_tokens": 0,
        "cpt_steps": 0, "heldout_every": 0, "layers": [], "ard_layers": [], **settings,
    }  # fmt: skip
    return resolve_config(recipe, profile="tiny", overrides=overrides)


@dataclass
class ShapeRun:
    """A built benchmark run."""

    method: Method
    batches: dict[str, Batch]
    optimizer: torch.optim.Optimizer
    autocast: torch.autocast
    tokens: int


def _layers(cfg: TrainConfig, layers: int) -> tuple[int, ...]:
    if cfg.recipe == "longred":  # top_m layers spread over the stack, plus the last
        picked = {round(1 + i * (layers - 1) / max(1, cfg.top_m)) for i in range(cfg.top_m)}
        return tuple(sorted(picked | {layers}))
    if cfg.recipe == "linearard":
        return cfg.ard_layers or tuple(range(1, layers + 1))
    return ()


def build(model_shape: ModelShape, cfg: TrainConfig, device: str, dtype: torch.dtype) -> ShapeRun:
    """The student, teacher, rows and method of ``cfg`` at ``model_shape`` on ``device``;
    ``dtype`` is the compute dtype (bf16 autocast, or FSDP2's policy, where not float32)."""
    window = cfg.long_len // 4
    student = random_model(model_shape, device=device)
    teacher = None
    if cfg.recipe in ("longred", "linearard"):
        teacher = copy.deepcopy(student).to(dtype).requires_grad_(False).eval()
    student = adapt_student(student, cfg).train()  # LoRA or attention-only, as the loop trains
    student = wrap_student(student, cfg, 1, dtype)
    lengths = stream_lengths(cfg, window)
    rows = micro_rows(cfg, window)
    if cfg.recipe == "linearard":
        rows = {"s2l": rows["s2l"]}
    gen = torch.Generator().manual_seed(cfg.seed)
    batches = {}
    for name, count in rows.items():
        ids = torch.randint(0, model_shape.vocab, (count, lengths[name]), generator=gen)
        batches[name] = Batch(ids, torch.ones_like(ids, dtype=torch.bool)).to(torch.device(device))
    target = 4 * window
    method = METHODS[cfg.recipe](
        cfg, student, teacher, rows, window, _layers(cfg, model_shape.layers),
        torch.Generator().manual_seed(cfg.seed + 7), 0, 1, target,
    )  # fmt: skip
    params = [p for p in method.student.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, betas=tuple(cfg.betas))
    on = dtype != torch.float32 and cfg.mixed_precision == "autocast"
    autocast = torch.autocast(torch.device(device).type, dtype=dtype, enabled=on)
    tokens = sum(b.tokens for b in batches.values())
    return ShapeRun(method, batches, optimizer, autocast, tokens)


def one_step(run: ShapeRun, offload, mark=None) -> torch.Tensor:
    """One optimizer step the way the loop takes it (zero the gradients, the method's loss under
    autocast and ``offload``'s hooks, backward, clip, AdamW); ``mark(phase, "start" | "end")``
    around ``forward``, ``backward`` and ``step``. Returns the loss, detached."""
    from longred_bench.training.offload import offloaded

    mark = mark or (lambda phase, when: None)
    run.optimizer.zero_grad(set_to_none=True)
    mark("forward", "start")
    with run.autocast, offloaded(offload):
        terms = run.method.losses(run.batches, 0)
    mark("forward", "end")
    mark("backward", "start")
    loss = terms["loss"]
    loss.backward()
    del terms
    mark("backward", "end")
    mark("step", "start")
    params = [p for group in run.optimizer.param_groups for p in group["params"]]
    torch.nn.utils.clip_grad_norm_(params, run.method.cfg.grad_clip)
    run.optimizer.step()
    mark("step", "end")
    return loss.detach()


def train_steps(run: ShapeRun, steps: int, *, before_step=None) -> list[float]:
    """Seconds of each of ``steps`` optimizer steps; ``before_step(i)`` is called before step
    ``i`` (e.g. to reset a peak-memory counter)."""
    from longred_bench.training.offload import HostOffload

    device = next(iter(run.batches.values())).ids.device
    offload = HostOffload() if run.method.cfg.activation_offload else None
    seconds = []
    for i in range(steps):
        if before_step is not None:
            before_step(i)
        cuda_sync(device)
        began = time.perf_counter()
        loss = one_step(run, offload)
        cuda_sync(device)
        seconds.append(time.perf_counter() - began)
        if not torch.isfinite(loss):
            raise RuntimeError(f"non-finite loss at step {i + 1}")
    return seconds


def release(device: torch.device | str) -> None:
    """After a run is deleted: close the one-process group its FSDP2 wrapping opened, collect
    the wrapped model's reference cycles and hand the GPU's cached blocks back, before the
    next run's model is built."""
    import gc

    from longred_bench.training.distributed import close_single_process_group

    close_single_process_group()
    gc.collect()
    if torch.device(device).type == "cuda":
        torch.cuda.empty_cache()
