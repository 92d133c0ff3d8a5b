"""The documents of a training data source (:mod:`longred_bench.data.corpus_spec`), after its
fallback rule, and what a run's record keeps of them.

:func:`resolve_source` applies the fallback rule: hub members are fetched (or found in the
cache); if one cannot be, the source's ``|FALLBACK`` is read instead, said once per process in one
line and recorded (refused in a job ``--emit-slurm`` planned with the hub's rows). Which of the
two a source reads is decided once per process, before anything is trained
(:func:`source_read`): a unit's key names it, so a run trained on the fallback is never taken
for one trained on the hub's rows. A source whose hub side was chosen and whose hub then stops
answering is refused, not switched to the fallback under the hub's key.
:func:`member_documents` reads one member's texts: a registry corpus's split, a local folder or
file, or a hub member's cached rows.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longred_bench.cache import warn
from longred_bench.data import hub_corpora
from longred_bench.data.corpus_spec import Member, Source, parse_source
from longred_bench.data.local_corpora import (
    disk_documents,
    jsonl_documents,
    texts_fingerprint,
    txt_documents,
)
from longred_bench.errors import UserError


@dataclass(frozen=True)
class Resolved:
    """A source after the fallback rule: ``source`` is what is read, ``record`` what the run's
    record keeps of it (the spec; the fallback taken and why; each hub member's revision)."""

    source: Source
    record: dict[str, Any]


_SAID: set[str] = set()
_CHOSEN: dict[str, str | None] = {}
"""Each fallback source's side in this process (:func:`_choose`): None for the hub's rows, else
why the fallback is read."""


def _choose(source: Source) -> str | None:
    """Why ``source`` (hub members and a fallback) reads its fallback in this process, or None
    where it reads the hub's rows: every hub member cached, or the hub answering for each.
    Decided once per process; the fallback is refused where ``--emit-slurm`` planned the hub."""
    if source.spec in _CHOSEN:
        return _CHOSEN[source.spec]
    why = None
    for member in (m for m in source.members if m.kind == "hf"):
        try:
            hub_corpora.check_available(member)
        except hub_corpora.HubUnavailable as exc:
            why = str(exc)
            _check_fallback_allowed(source.spec, source, exc)
            break
    _CHOSEN[source.spec] = why
    return why


def source_read(spec: str) -> str | None:
    """What source ``spec`` reads in this process, as a spec, where it has two sides (hub
    members and an offline fallback): its hub members (``spec`` without the fallback) or its
    fallback. None for any other source (nothing to choose). A unit's key holds it."""
    try:
        source = parse_source(spec)
    except UserError:  # the unit refuses it in its own words
        return None
    if not source.fallback:
        return None
    return source.spec.partition("|")[0] if _choose(source) is None else source.fallback_spec


def resolve_source(spec: str, *, network: bool = True) -> Resolved:
    """Apply the fallback rule to source ``spec`` (module docstring). With ``network=False`` (a
    dry run) no rows are fetched: a hub member counts as readable where this process chose the
    hub's side (a source with a fallback), or unless offline mode is set and its rows are not
    cached (one without)."""
    source = parse_source(spec)
    record: dict[str, Any] = {"source": spec}
    hub = [m for m in source.members if m.kind == "hf"]
    why = _choose(source) if source.fallback else None
    if why is not None:
        record["fallback"] = {"used": source.fallback_spec, "reason": why}
        if spec not in _SAID:
            _SAID.add(spec)
            warn(f"data {spec!r}: {why}; using the offline fallback {source.fallback_spec!r}")
        return Resolved(Source(source.fallback_spec, source.fallback), record)
    try:
        for member in hub:
            if network:
                record.setdefault("hub", []).append(hub_corpora.hub_entry(member).record())
            elif not source.fallback:
                hub_corpora.check_readable(member)
    except hub_corpora.HubUnavailable as exc:
        if source.fallback:  # the hub answered when this process chose its rows
            raise UserError(
                f"data source {spec!r}: {exc}; the hub answered when this run was planned, so "
                f"its key names the hub's rows: run it again where the hub answers, or with "
                f"HF_DATASETS_OFFLINE=1 to train on the fallback {source.fallback_spec!r} (a "
                f"run of its own)"
            ) from None
        raise UserError(
            f"data source {spec!r}: {exc}, and it names no offline fallback (add "
            f"'|austen+kjv', say) "
        ) from None
    return Resolved(source, record)


def _check_fallback_allowed(spec: str, source: Source, exc: Exception) -> None:
    """Refuse the fallback of ``spec`` where the job was planned with the hub's rows
    (:data:`~longred_bench.data.hub_corpora.NO_FALLBACK` set by ``--emit-slurm``) and no offline
    variable asks for the fallback here."""
    if os.environ.get(hub_corpora.NO_FALLBACK, "").strip() in ("", "0"):
        return
    if hub_corpora.offline_reason() is not None:
        return
    raise UserError(
        f"data source {spec!r}: {exc}, and this job was planned to read the hub's rows "
        f"({hub_corpora.NO_FALLBACK} is set, as --emit-slurm sets it in jobs planned where the "
        "hub answered): run it where the hub answers, or "
        f"emit the jobs again with HF_DATASETS_OFFLINE=1 to train every unit on the fallback "
        f"{source.fallback_spec!r}"
    )


def member_documents(member: Member, split: str = "train") -> tuple[list[str], dict[str, Any]]:
    """The texts of one member (a registry corpus's ``split``; the whole of any other) and what
    a run's record keeps of them: the spec, the document count and, for local data, a
    fingerprint of the texts (a ``save_to_disk`` folder's own fingerprint too)."""
    o = member.options
    record: dict[str, Any] = {"spec": member.spec}
    path = Path(member.target).expanduser()
    if member.kind == "corpus":
        from longred_bench.data.corpora import load_documents

        texts = [d.text for d in load_documents(member.target, split)]
        record["split"] = split
    elif member.kind == "txt":
        texts = txt_documents(path, member.spec)
    elif member.kind == "jsonl":
        texts = jsonl_documents(path, o["field"], member.spec)
    elif member.kind == "disk":
        texts, record["dataset_fingerprint"] = disk_documents(
            path, o["field"], o["split"], member.spec
        )
    elif member.kind == "hf":
        texts = hub_corpora.hub_documents(member)
    else:
        raise UserError(f"data member {member.spec!r} holds no documents of its own")
    record["documents"] = len(texts)
    if member.kind in ("txt", "jsonl", "disk"):
        record["fingerprint"] = texts_fingerprint(texts)
    return texts, record
