"""Values the processes of a ``torchrun`` share, for work outside the training loop's own
collectives (LongRecipe's anchor measurement: :mod:`longred_bench.training.anchors`; a merge,
written by process 0 alone: :func:`from_process_0`). With one process each returns its own
value, and nothing needs a process group."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist


def on_every_process(value: Any, world: int) -> Any:
    """Process 0's ``value`` (picklable), returned on every process (``value`` itself where
    ``world`` is 1). Every process calls it."""
    if world == 1:
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def every_process(value: Any, world: int) -> list[Any]:
    """Every process's ``value`` (picklable; a tensor travels on the CPU), in rank order, on every
    process. Every process calls it."""
    if world == 1:
        return [value]
    out: list[Any] = [None] * world
    dist.all_gather_object(out, value.cpu() if isinstance(value, torch.Tensor) else value)
    return out


ALONE_TIMEOUT = timedelta(hours=24)
"""How long the other processes wait for :func:`from_process_0`'s work: the process group's
own timeout (30 min for gloo, 10 for NCCL) ended them while process 0 still loaded and wrote
two large models."""


def from_process_0(work: Callable[[], Any], rank: int, world: int) -> Any:
    """``work()`` run by process 0 alone, its value (picklable) returned on every process. The
    others wait on a gloo group of their own whose timeout is :data:`ALONE_TIMEOUT`; where
    ``work`` raises, process 0 raises it and the others stop with ``SystemExit(1)`` (process 0
    says why), every process with its process groups closed (one that exits with a gloo group
    open can abort in gloo's threads as the interpreter shuts down). Every process calls it."""
    if world == 1:
        return work()
    group = dist.new_group(backend="gloo", timeout=ALONE_TIMEOUT)
    box: list[Any] = [None]
    ends = True  # the run stops here, unless process 0's work is done
    try:
        if rank == 0:
            try:
                box = [("done", work())]
            except BaseException:
                dist.broadcast_object_list([("failed", None)], src=0, group=group)
                raise
        dist.broadcast_object_list(box, src=0, group=group)
        ends = box[0][0] == "failed"
    finally:
        dist.destroy_process_group(group)
        if ends:
            dist.destroy_process_group()
    state, value = box[0]
    if state == "failed":
        raise SystemExit(1)
    return value
