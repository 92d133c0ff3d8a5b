"""Data parallelism with PyTorch's own tools, for runs started by ``torchrun``.

``torchrun --nproc_per_node N -m longred_bench.training.launch ...`` (or ``longred-bench train``
under torchrun) sets ``RANK``/``WORLD_SIZE``; :func:`init_distributed` joins the process group
(NCCL on CUDA, gloo on CPU) and :func:`wrap_student` wraps the student in DDP, or shards it with
FSDP2's ``fully_shard`` (with activation checkpointing where the config asks) when
``distributed: fsdp``. Every process draws its slice of the same global batch
(:class:`~longred_bench.training.streams.WindowStream`), so the loss curve does not depend on the
number of processes. The frozen teacher is replicated (``teacher_placement: replicate``) or
sharded with ``fully_shard`` too (``shard``).
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

from longred_bench.training.config import TrainConfig


def init_distributed() -> tuple[int, int]:
    """(rank, world size): joins the process group when started by torchrun, else (0, 1)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        return 0, 1
    if not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend)
        if torch.cuda.is_available():
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    return dist.get_rank(), dist.get_world_size()


def _decoder_layers(model: torch.nn.Module) -> list[torch.nn.Module]:
    return [m for m in model.modules() if type(m).__name__.endswith("DecoderLayer")]


def wrap_student(model: torch.nn.Module, cfg: TrainConfig, world: int) -> torch.nn.Module:
    """The student as the config asks: as it is (one process), DDP, or FSDP2-sharded."""
    if world == 1:
        return model
    if cfg.distributed == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        device = next(model.parameters()).device
        ids = [device.index] if device.type == "cuda" else None
        # LinearARD's loss never reaches the last MLP, final norm and LM head.
        unused = cfg.recipe == "linearard"
        return DistributedDataParallel(model, device_ids=ids, find_unused_parameters=unused)
    from torch.distributed.fsdp import fully_shard

    if cfg.activation_checkpointing:
        model.gradient_checkpointing_enable()
    for layer in _decoder_layers(model):
        fully_shard(layer)
    fully_shard(model)
    return model


def place_teacher(teacher: torch.nn.Module, cfg: TrainConfig, world: int) -> torch.nn.Module:
    """The frozen teacher replicated on every process, or sharded with ``fully_shard``."""
    if world == 1 or cfg.teacher_placement == "replicate":
        return teacher
    from torch.distributed.fsdp import fully_shard

    for layer in _decoder_layers(teacher):
        fully_shard(layer)
    fully_shard(teacher)
    return teacher


def mean_over_processes(values: dict[str, float], world: int) -> dict[str, float]:
    """The mean of each logged value over all processes (the global batch's value)."""
    if world == 1:
        return values
    keys = sorted(values)
    tensor = torch.tensor([values[k] for k in keys], dtype=torch.float64)
    dist.all_reduce(tensor)
    return {k: float(v) / world for k, v in zip(keys, tensor.tolist(), strict=True)}
