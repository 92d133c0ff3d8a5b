"""The config a model will have, for plans, dry runs and checks, read without building it:
``tiny-base``'s from its recipe (the ``pretrain`` recipe at profile ``tiny``, whose build takes
about 15 minutes on 2 CPU cores), any other model's from its files
(:func:`~longred_bench.models.loading.load_config`). A dry run of an extension of tiny-base, a
teacher of another shape, a profile's stated window and depth are all read here, and nothing is
built."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

ARCHITECTURE_DEFAULTS: dict[str, Any] = {
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
    "max_position_embeddings": 256,
}
"""What ``pretrain`` gives a model whose ``architecture`` leaves these keys out."""
MODEL_KEYS = ("model", "teacher", "init", "merge_with")
"""The training config keys that name a model (a zoo name, a local path or a hub id)."""
BUILT_BY_PRETRAIN = "tiny-base"
"""The zoo model the suite builds with the ``pretrain`` recipe at profile ``tiny``."""


def planning_config(spec: str) -> object:
    """Model ``spec``'s config without building it: tiny-base's architecture from its recipe
    (no vocabulary size: its tokenizer is trained by the build), any other model's config."""
    if spec == BUILT_BY_PRETRAIN:
        from longred_bench.training.config import resolve_config

        arch = resolve_config("pretrain", profile="tiny").architecture
        return SimpleNamespace(model_type="llama", **{**ARCHITECTURE_DEFAULTS, **arch})
    from longred_bench.models.loading import load_config

    return load_config(spec)
