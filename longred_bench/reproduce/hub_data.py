"""The hub data a table's pending units read, and how ``--emit-slurm`` pins it: every node reads
what the emitting process would, the hub's rows where the hub answers there, else each source's
offline fallback; never the hub's rows for some units and the fallback for others (a CPT and a
LongReD run trained on different data would be compared as if data-matched).

A training unit reads its ``long_data``, ``short_data`` and ``s2l_data`` sources, a perplexity
unit its ``corpus`` (:mod:`longred_bench.data.corpus_spec`). Rows already in the cache are read
from it on every node that shares the cache (a cached entry never changes), so only the hub
members not cached yet decide the pin.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from longred_bench.errors import UserError

SOURCE_KEYS = ("long_data", "short_data", "s2l_data", "corpus")
"""The keys of a unit's config that name a data source."""


def uncached_hub_members(configs: Iterable[dict[str, Any]]) -> list[str]:
    """The hub datasets (``hf:`` members of a source with an offline fallback) that the
    ``configs`` read and the cache does not hold yet, once each, in order."""
    from longred_bench.data.corpus_spec import parse_source
    from longred_bench.data.hub_corpora import is_cached

    found: dict[str, None] = {}
    for config in configs:
        for key in SOURCE_KEYS:
            spec = config.get(key)
            if not isinstance(spec, str):
                continue
            try:
                source = parse_source(spec)
            except UserError:  # the unit refuses it in its own words when it runs
                continue
            if not source.fallback:  # no fallback to take: a node without the hub stops anyway
                continue
            for member in source.members:
                if member.kind == "hf" and not is_cached(member):
                    found[member.target] = None
    return list(found)


def hub_id(model: str) -> str | None:
    """``model`` where it is a hub id (no zoo name, local folder or ``.gguf`` file), which every
    node reads from the hub; else None."""
    from longred_bench.models.names import check_local

    return None if check_local(model) else model


def data_pin(
    configs: Iterable[dict[str, Any]], *, hub_model: str | None = None
) -> tuple[str | None, list[str]]:
    """How the jobs of units of ``configs`` read hub data, decided here, and the datasets that
    decide it: ``"fallback"`` where one is not cached and an offline variable is set here, or
    the hub does not answer here and the jobs' model (``hub_model``: a hub id, which the nodes
    read from the hub anyway) does not need it; ``"hub"`` where it would be fetched from the
    hub; None where every hub member is cached or none is read. A login node without the hub
    so no longer pins a run of a hub model onto the small offline corpora."""
    from longred_bench.data.hub_corpora import offline_reason
    from longred_bench.models.names import hub_unreachable

    members = uncached_hub_members(configs)
    if not members:
        return None, []
    if offline_reason():  # asked for, here
        return "fallback", members
    return ("hub" if hub_model or not hub_unreachable() else "fallback"), members


def pin_note(pin: str, members: list[str], hub_model: str | None = None) -> str:
    """The line ``--emit-slurm`` prints about a ``pin`` of :func:`data_pin`."""
    names = ", ".join(members)
    if pin == "fallback":
        return (f"note: the jobs train on the offline fallbacks of {names} (not cached, and the "
                "hub is not available here): they export LONGRED_DATA_FALLBACK=1, so every node "
                "does; the fallbacks are small local corpora, which a long run reads many times "
                "over")  # fmt: skip
    why = f"; the nodes read the model {hub_model} from the hub anyway" if hub_model else ""
    return (
        f"note: the jobs read {names} from the hub (not cached yet{why}): a node that cannot "
        "reach the hub stops in one line (they export LONGRED_NO_FALLBACK=1); emit them with "
        "HF_DATASETS_OFFLINE=1 to train every unit on the offline fallbacks instead"
    )
