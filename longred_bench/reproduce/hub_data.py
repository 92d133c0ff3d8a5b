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


def data_pin(configs: Iterable[dict[str, Any]]) -> tuple[str | None, list[str]]:
    """How the jobs of units of ``configs`` read hub data, decided here, and the datasets that
    decide it: ``"fallback"`` where one is not cached and the hub is not available here (an
    offline variable set, or no connection), ``"hub"`` where it would be fetched from the hub,
    None where every hub member is cached or none is read."""
    from longred_bench.data.hub_corpora import offline_reason
    from longred_bench.models.names import hub_unreachable

    members = uncached_hub_members(configs)
    if not members:
        return None, []
    return ("fallback" if offline_reason() or hub_unreachable() else "hub"), members


def pin_note(pin: str, members: list[str]) -> str:
    """The line ``--emit-slurm`` prints about a ``pin`` of :func:`data_pin`."""
    names = ", ".join(members)
    if pin == "fallback":
        return (f"note: the jobs train on the offline fallbacks of {names} (not cached, and the "
                "hub is not available here): they export LONGRED_DATA_FALLBACK=1, so every node "
                "does")  # fmt: skip
    return (
        f"note: the jobs read {names} from the hub (not cached yet): a node that cannot reach "
        "the hub stops in one line (they export LONGRED_NO_FALLBACK=1); emit them with "
        "HF_DATASETS_OFFLINE=1 to train every unit on the offline fallbacks instead"
    )
