"""Zoo models that the suite builds on first use, registered by the layer that builds them: a
name and a function returning the model's Hugging Face folder (building it first if needed).
``longred_bench.jobs.tiny_base`` registers ``tiny-base`` when ``longred_bench.jobs`` is imported
(every command and job does); :mod:`longred_bench.models.zoo` looks a name up here when it is
asked for, and :func:`~longred_bench.models.loading.planning_config` asks for the config a name
will have without building it (a dry run, a plan, a check of a teacher's shape). Torch-free, so a
builder registers without importing the modelling code."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

BUILDERS: dict[str, Callable[[], Path]] = {}
CONFIGS: dict[str, Callable[[], object]] = {}


def register_builder(
    name: str, build: Callable[[], Path], config: Callable[[], object] | None = None
) -> None:
    """Make ``name`` a zoo model whose folder ``build()`` returns (built on first use);
    ``config()``, where given, returns the model config it will have (its architecture keys,
    read without building anything)."""
    BUILDERS[name] = build
    if config is not None:
        CONFIGS[name] = config
