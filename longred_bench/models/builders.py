"""Zoo models that the suite builds on first use, registered by the layer that builds them: a
name and a function returning the model's Hugging Face folder (building it first if needed).
``longred_bench.jobs.tiny_base`` registers ``tiny-base`` when ``longred_bench.jobs`` is imported
(every command and job does); :mod:`longred_bench.models.zoo` looks a name up here when it is
asked for. Torch-free, so a builder registers without importing the modelling code."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

BUILDERS: dict[str, Callable[[], Path]] = {}


def register_builder(name: str, build: Callable[[], Path]) -> None:
    """Make ``name`` a zoo model whose folder ``build()`` returns (built on first use)."""
    BUILDERS[name] = build
