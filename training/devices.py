"""The device and floating dtype a training config runs in (``auto``: CUDA if present, bfloat16
there, float32 on the CPU): a leaf module, so that the run's builder and LongRecipe's anchor
measurement (which the methods the builder imports call) both read it without an import cycle."""

from __future__ import annotations

from typing import Any

from longred_bench.errors import UserError
from longred_bench.training.config import TrainConfig


def floating_dtype(name: str) -> Any:
    """The torch floating dtype named ``name`` (``bfloat16``, ``float32``, ...); a one-line
    error for any other name."""
    import torch

    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise UserError(f"config dtype={name!r} is not a torch floating dtype (or auto)")
    return dtype


def resolve_device(cfg: TrainConfig) -> tuple[Any, Any]:
    """``auto``: CUDA if present, else CPU; dtype ``auto``: bfloat16 on CUDA, float32 on CPU."""
    import torch

    name = cfg.device if cfg.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if cfg.dtype == "auto":
        return device, torch.bfloat16 if device.type == "cuda" else torch.float32
    return device, floating_dtype(cfg.dtype)
