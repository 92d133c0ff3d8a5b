"""The scale profiles: the one registry of profile names that every table, ``reproduce`` and
``train`` read.

The same code runs at every scale; a profile only changes the numbers. Each table module keeps
its own settings per profile (e.g. ``TABLE3_PROFILES``), keyed by the names registered here, and
``train`` takes its per-profile overrides from the recipes' YAML; ``longred-bench profiles``
lists what each profile supports.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from longred_bench.errors import UserError


@dataclass(frozen=True)
class Profile:
    """One scale: the model it runs, where it runs and what it is for."""

    name: str
    model: str
    where: str
    purpose: str


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile("smoke", "tiny random / tiny pretrained Llama", "CPU, CI, seconds",
                "every pipeline end to end; structure, never numbers"),
        Profile("tiny", "tiny-base, pretrained by the suite (256-token window)",
                "2 CPU cores, tens of minutes", "small-scale reproduction of the tables"),
        Profile("smol", "SmolLM2-135M (real weights, offline)", "GPU, or a patient CPU",
                "drift and retention of a real model, zero-shot extensions"),
        Profile("paper", "Llama-3-8B, Mistral-7B-v0.3, Llama-2-7B", "GPU cluster, hub access",
                "the papers' own configurations"),
    )
}  # fmt: skip


def profile_help() -> str:
    """``smoke | tiny | smol | paper``: the registered names, for help texts."""
    return " | ".join(PROFILES)


def check_profile(name: str, available: Iterable[str], what: str) -> None:
    """Raise :class:`UserError` unless ``name`` is a registered profile that ``what`` (a table
    or command) has settings for; the message lists the ones it has."""
    have = [p for p in PROFILES if p in set(available)]
    if name not in PROFILES:
        raise UserError(f"unknown profile {name!r}; profiles: {', '.join(PROFILES)}")
    if name not in have:
        raise UserError(f"{what} has no profile {name!r}; it runs at: {', '.join(have)}")
