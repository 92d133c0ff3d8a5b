"""Atomic training checkpoints: student weights (safetensors), optimizer, schedule, RNG states and
the data position, under ``DIR/checkpoints/step-NNNNNN/``.

A checkpoint directory is written under a temporary name and renamed into place
(:func:`longred_bench.cache.atomic_dir`), so a killed run leaves either the whole checkpoint or
none; ``DIR/checkpoints/latest`` names the newest complete one (resuming takes the newest whole
folder, the pointer or not: :func:`latest_checkpoint`). Only the student is saved: the
frozen teacher is never part of a checkpoint.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from longred_bench.cache import atomic_dir, atomic_write_text
from longred_bench.errors import UserError

WEIGHTS = "student.safetensors"
STATE = "state.pt"


def rng_state() -> dict[str, Any]:
    """The states of every random generator a run draws from."""
    state = {
        "torch": torch.get_rng_state(),
        "python": random.getstate(),
        "numpy": np.random.get_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` saved."""
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _unshared(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Copies of tensors that share storage (tied embeddings), as safetensors requires."""
    seen: set[int] = set()
    out = {}
    for name, tensor in state.items():
        ptr = tensor.untyped_storage().data_ptr()
        out[name] = tensor.detach().clone() if ptr in seen else tensor.detach().contiguous()
        seen.add(ptr)
    return out


def save_weights(state: dict[str, torch.Tensor], path: Path) -> None:
    """A state dict as one safetensors file (shared tensors copied)."""
    save_file(_unshared(state), str(path), metadata={"format": "pt"})


def save_checkpoint(
    out: Path, step: int, model_state: dict[str, torch.Tensor], state: dict[str, Any], keep: int
) -> Path:
    """Write checkpoint ``step`` atomically, point ``latest`` at it, keep the newest ``keep``."""
    root = out / "checkpoints"
    final = root / f"step-{step:06d}"
    if final.exists():
        shutil.rmtree(final)
    with atomic_dir(final) as tmp:
        save_weights(model_state, tmp / WEIGHTS)
        torch.save(state, tmp / STATE)
    atomic_write_text(root / "latest", final.name + "\n")
    for old in sorted(root.glob("step-*"))[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def _whole(path: Path) -> bool:
    return (path / STATE).is_file() and (path / WEIGHTS).is_file()


def latest_checkpoint(out: Path) -> Path | None:
    """The newest complete checkpoint of run ``out``, or None. ``latest`` names it after every
    save, but a run killed between a checkpoint's rename and the pointer's write (or while a
    step was written again) leaves the pointer behind or dangling: the newest whole
    ``step-NNNNNN`` folder is taken, so no saved step is lost (a dangling pointer restarted the
    run from step 0)."""
    root = out / "checkpoints"
    steps = sorted(root.glob("step-[0-9]*")) if root.is_dir() else []
    whole = [p for p in steps if _whole(p)]
    return whole[-1] if whole else None


def load_checkpoint(path: Path) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """(student state dict, the rest of the saved state); a file that cannot be read (cut
    short, damaged) is a one-line error naming the folder to delete to resume from the one
    before it."""
    try:
        return load_file(str(path / WEIGHTS)), torch.load(path / STATE, weights_only=False)
    except Exception as exc:  # safetensors, pickle, zip and OS errors of a damaged file alike
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise UserError(f"checkpoint {path} cannot be read ({first}): delete that folder to "
                        "resume from the checkpoint before it") from None  # fmt: skip
