"""Data parallelism with PyTorch's own tools, for runs started by ``torchrun``.

``torchrun --nproc_per_node N -m longred_bench.training.launch ...`` (or ``longred-bench train``
under torchrun) sets ``RANK``/``WORLD_SIZE``; :func:`init_distributed` joins the process group
(NCCL on CUDA, gloo on CPU) and :func:`wrap_student` wraps the student in DDP, or shards it with
FSDP2's ``fully_shard`` (with activation checkpointing where the config asks) when
``distributed: fsdp``. Every process draws its slice of the same global batch
(:class:`~longred_bench.training.streams.WindowStream`), so the loss curve does not depend on the
number of processes. The frozen teacher is replicated (``teacher_placement: replicate``) or
sharded with ``fully_shard`` too (``shard``). Checkpoints of a sharded student hold its whole
weights and optimizer state, gathered by every process (:func:`full_states`).
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
        # NCCL for the GPU's tensors, gloo for the CPU's (the logged values' mean, objects)
        backend = "cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend)
        if torch.cuda.is_available():
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    return dist.get_rank(), dist.get_world_size()


def leave_distributed(world: int) -> None:
    """A ``torchrun`` process's last step once its work is done: it waits for every process
    (process 0 still writes the final model while the others are done; on a gloo group of
    :data:`~longred_bench.training.collectives.ALONE_TIMEOUT`, as a merge's wait), then closes
    the process groups while the interpreter is whole. A process that exited with its group
    open could abort (SIGABRT) in gloo's threads as the interpreter shut down, and ``torchrun``
    then stopped process 0 midway through writing the model. Every process calls it; nothing
    to do with one process."""
    if world == 1 or not dist.is_initialized():
        return
    from longred_bench.training.collectives import ALONE_TIMEOUT

    group = dist.new_group(backend="gloo", timeout=ALONE_TIMEOUT)
    dist.barrier(group=group)
    dist.destroy_process_group(group)
    dist.destroy_process_group()


def _decoder_layers(model: torch.nn.Module) -> list[torch.nn.Module]:
    return [m for m in model.modules() if type(m).__name__.endswith("DecoderLayer")]


_OWN_GROUP: list[bool] = []  # set while a one-process group of ours is open


def _single_process_group() -> None:
    """A process group of this process alone (FSDP2 needs one to wrap a model on one device)."""
    if not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)
        _OWN_GROUP.append(True)


def close_single_process_group() -> None:
    """Close the one-process group :func:`wrap_student` opened, if it did (a run leaves the
    process as it found it)."""
    if _OWN_GROUP:
        dist.destroy_process_group()
        _OWN_GROUP.clear()


def is_sharded(model: torch.nn.Module) -> bool:
    """Whether ``model`` is wrapped by FSDP2 (its state is gathered by every process)."""
    from torch.distributed.fsdp import FSDPModule

    return isinstance(model, FSDPModule)


def enable_activation_checkpointing(model: torch.nn.Module) -> None:
    """transformers' own checkpointing of every decoder layer (non-reentrant), by whichever name
    the installed version has (``activation_checkpointing_enable`` from 5.2x on)."""
    kwargs = {"use_reentrant": False}
    if hasattr(model, "activation_checkpointing_enable"):
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)


def wrap_student(
    model: torch.nn.Module, cfg: TrainConfig, world: int, dtype: torch.dtype = torch.float32
) -> torch.nn.Module:
    """The student as the config asks: activation checkpointing per decoder layer and compiled
    decoder layers where set, then as it is (one process), DDP, or FSDP2-sharded per decoder
    layer. ``mixed_precision: fsdp`` shards with FSDP2's policy (parameters all-gathered and
    computed in ``dtype``, gradients reduced in float32, float32 master weights), on one process
    too (over a one-process group), so one device has the numerics of many."""
    if cfg.activation_checkpointing:
        enable_activation_checkpointing(model)
    if cfg.compile:
        for layer in _decoder_layers(model):
            layer.compile()
    if world == 1 and cfg.mixed_precision != "fsdp":
        return model
    if cfg.distributed == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        device = next(model.parameters()).device
        ids = [device.index] if device.type == "cuda" else None
        # LinearARD's loss never reaches the last MLP, final norm and LM head.
        from longred_bench.training.methods import METHODS

        unused = METHODS[cfg.recipe].UNUSED_PARAMETERS
        return DistributedDataParallel(model, device_ids=ids, find_unused_parameters=unused)
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    if world == 1:
        _single_process_group()
    policy = MixedPrecisionPolicy()
    if cfg.mixed_precision == "fsdp":
        policy = MixedPrecisionPolicy(param_dtype=dtype, reduce_dtype=torch.float32)
    layers = _decoder_layers(model)
    # LinearARD's loss reads q/k/v inside its last compared layer, never that layer's output,
    # where FSDP2 gathers a layer's weights again for the backward pass: that layer keeps them
    # gathered from its forward pass (its gradients are still reduced at the end of backward).
    last = max(cfg.ard_layers or (len(layers),)) - 1 if cfg.recipe == "linearard" else -1
    for i, layer in enumerate(layers):
        fully_shard(layer, mp_policy=policy, reshard_after_forward=i != last)
    fully_shard(model, mp_policy=policy)
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


def full_states(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> tuple[dict, dict]:
    """(weights, optimizer state) for a checkpoint. Under FSDP2 every process joins in gathering
    them whole onto the CPU (rank 0 gets them; the optimizer state keyed by parameter name);
    otherwise the (unwrapped) model's and the optimizer's own."""
    if not is_sharded(model):
        return getattr(model, "module", model).state_dict(), optimizer.state_dict()
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        get_model_state_dict,
        get_optimizer_state_dict,
    )

    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    weights = get_model_state_dict(model, options=options)
    return weights, get_optimizer_state_dict(model, optimizer, options=options)


def load_full_states(
    model: torch.nn.Module, optimizer: torch.optim.Optimizer, weights: dict, optim_state: dict
) -> None:
    """Load what :func:`full_states` saved (every process reads the whole checkpoint)."""
    if not is_sharded(model):
        getattr(model, "module", model).load_state_dict(weights)
        optimizer.load_state_dict(optim_state)
        return
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        set_model_state_dict,
        set_optimizer_state_dict,
    )

    options = StateDictOptions(full_state_dict=True)
    set_model_state_dict(model, weights, options=options)
    set_optimizer_state_dict(model, optimizer, optim_state, options=options)


def mean_over_processes(values: dict[str, float], world: int) -> dict[str, float]:
    """The mean of each logged value over all processes (the global batch's value)."""
    if world == 1:
        return values
    keys = sorted(values)
    tensor = torch.tensor([values[k] for k in keys], dtype=torch.float64)
    dist.all_reduce(tensor)
    return {k: float(v) / world for k, v in zip(keys, tensor.tolist(), strict=True)}
