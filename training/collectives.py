"""Values the processes of a ``torchrun`` share, for work outside the training loop's own
collectives (LongRecipe's anchor measurement: :mod:`longred_bench.training.anchors`). With one
process each returns its own value, and nothing needs a process group."""

from __future__ import annotations

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
