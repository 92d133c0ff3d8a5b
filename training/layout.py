"""Where a training run keeps its files, below its output folder (torch-free, so plans name a
run's models without importing the training loop)."""

from __future__ import annotations

from pathlib import Path

METRICS = "metrics.jsonl"
SNAPSHOTS = "steps"


def snapshot_dir(out: Path, step: int) -> Path:
    """Where run ``out`` keeps its model of optimizer step ``step`` (``snapshot_steps``)."""
    return out / SNAPSHOTS / f"step-{step:06d}"
