"""Activation offload: the tensors autograd keeps for the backward pass, moved to pinned host
memory as the forward pass saves them and brought back to the device as the backward pass
reads them (``activation_offload: true``, the profile's ``hardware.activation_offload``).

It is meant beside activation checkpointing, which it requires: a checkpointed decoder layer
keeps only its input, and the checkpoint saves that input through autograd's saved-tensor hooks,
so under :meth:`HostOffload.hooks` each layer's input goes to the host while the layer's own
tensors are still recomputed on the device. At 131,072 tokens a GPU this moves Llama-3-8B's 32
layer inputs (32 GiB in bf16) off the device; the memory model
(:mod:`~longred_bench.training.memory_model`) counts them as host memory instead.

Parameters (the weights a layer saves for its input gradient, gathered or not) and tensors under
``min_bytes`` stay where they are (kept detached: see :meth:`HostOffload.pack`); tensors already
on the CPU are not copied. Copies are
asynchronous on the current stream, so the device never waits for the host except where the
backward pass needs a tensor back.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch

MIN_BYTES = 1 << 20


class HostOffload:
    """Saved-tensor hooks that keep device tensors in pinned host memory; ``seen`` and
    ``moved`` count the bytes saved under them and the bytes moved to the host, ``passes`` the
    forward passes run under them."""

    kept_on: tuple[str, ...] = ("cpu",)
    """Device types whose tensors stay where they are (the host itself)."""

    def __init__(self, min_bytes: int = MIN_BYTES) -> None:
        self.min_bytes = min_bytes
        self.seen = 0
        self.moved = 0
        self.passes = 0

    def pack(self, tensor: torch.Tensor) -> Any:
        size = tensor.numel() * tensor.element_size()
        self.seen += size
        if (
            tensor.device.type in self.kept_on
            or size < self.min_bytes
            or isinstance(tensor, torch.nn.Parameter)
        ):
            # detached: a saved graph output kept with its grad_fn would form a cycle through
            # autograd's C++ nodes that nothing frees when that part of the graph never runs
            # backward (LinearARD's unused tail), leaking GPU memory every step
            return tensor.detach()
        host = torch.empty_like(tensor, device="cpu", pin_memory=torch.cuda.is_available())
        host.copy_(tensor, non_blocking=True)
        self.moved += size
        return tensor.device, host

    @staticmethod
    def unpack(packed: Any) -> torch.Tensor:
        if isinstance(packed, tuple):
            device, host = packed
            return host.to(device, non_blocking=True)
        return packed

    def hooks(self) -> torch.autograd.graph.saved_tensors_hooks:
        """The context under which one forward pass's saved tensors are offloaded."""
        self.passes += 1
        return torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)

    def info(self) -> dict[str, float]:
        """For ``run.json``: MiB moved to the host per forward pass (mean over passes)."""
        return {"offloaded_mib_per_pass": round(self.moved / max(self.passes, 1) / 2**20, 1)}


def offloaded(offload: HostOffload | None) -> Any:
    """The context of one forward pass: ``offload``'s hooks, or nothing when it is None."""
    return offload.hooks() if offload is not None else contextlib.nullcontext()
