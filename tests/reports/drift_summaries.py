"""Drift summaries made here for the verdict tests: ``N`` texts whose per-text hidden
similarity and attention KL are given, with seeded noise to add to them."""

from __future__ import annotations

from typing import Any

import numpy as np

N = 12


def noise(seed: int, scale: float) -> np.ndarray:
    """``N`` seeded normal values of standard deviation ``scale``."""
    return scale * np.random.default_rng(seed).standard_normal(N)


def summary(hidden: Any, kl: Any, **extra: Any) -> dict[str, Any]:
    """A drift summary of ``N`` texts with per-text ``hidden`` and ``kl`` values (their means
    over the finite ones) and the ``extra`` fields (a seed, say)."""
    hidden, kl = np.asarray(hidden, dtype=float), np.asarray(kl, dtype=float)
    return {"texts": "sotu", "seq_len": 256, "num_texts": N, "num_tokens": 256 * N,
            "mean_hidden_cosine": float(np.nanmean(hidden)),
            "mean_attention_kl": float(np.nanmean(kl)),
            "text_hidden_cosine": hidden.tolist(), "text_attention_kl": kl.tolist(),
            **extra}  # fmt: skip
