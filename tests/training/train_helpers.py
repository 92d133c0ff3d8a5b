"""What the training tests share: a recipe's config at profile ``smoke``."""

from __future__ import annotations

from longred_bench.training.config import TrainConfig, resolve_config


def smoke(recipe: str, **overrides) -> TrainConfig:
    """``recipe`` resolved at profile ``smoke`` with ``overrides``."""
    return resolve_config(recipe, profile="smoke", overrides=overrides)
