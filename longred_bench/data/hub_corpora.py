"""Hub datasets as training data: an ``hf:`` member (:mod:`longred_bench.data.corpus_spec`) is
streamed with ``datasets`` at a resolved revision, its first ``docs`` rows kept as one cache
entry, and read from there afterwards.

Entry: ``<cache>/hub_corpora/<dataset>-<key>/`` (the key hashes the dataset, config, split,
field, ``docs`` and the revision asked for) holding ``documents.jsonl`` (``{"text": ...}`` per
line) and a manifest that records the commit the rows were read at (``revision``) and a
fingerprint of the texts. Where the hub answers, the dataset's current commit for the asked
revision is looked up first; an entry at that commit is reused, any other is read again. Where
it does not (``HF_HUB_OFFLINE`` or ``HF_DATASETS_OFFLINE`` set, or no answer), an entry already
cached is used as it is, and with none the member is unavailable (:class:`HubUnavailable`), so
the source's fallback applies.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longred_bench.cache import atomic_dir, cache_dir, check_entry, write_manifest
from longred_bench.data.corpus_spec import Member
from longred_bench.data.local_corpora import _text, texts_fingerprint
from longred_bench.errors import UserError

DOCUMENTS = "documents.jsonl"
OFFLINE_VARS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
REVISION_TIMEOUT_S = 10.0


class HubUnavailable(Exception):
    """A hub member can be neither read from the hub nor from the cache (the message says why)."""


@dataclass(frozen=True)
class HubEntry:
    """A hub member's cached rows: the folder, the commit they were read at, their count and
    fingerprint, and whether they came from an earlier run's cache without asking the hub."""

    member: Member
    path: Path
    revision: str
    documents: int
    fingerprint: str
    offline: bool

    def record(self) -> dict[str, Any]:
        """What a run's record keeps of this member."""
        o = self.member.options
        return {"spec": self.member.spec, "dataset": self.member.target, "config": o["config"],
                "split": o["split"], "revision": self.revision, "documents": self.documents,
                "fingerprint": self.fingerprint, "read_offline": self.offline}  # fmt: skip


def offline_reason() -> str | None:
    """Which offline variable is set, or None."""
    for name in OFFLINE_VARS:
        if os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on"):
            return f"{name} is set"
    return None


def entry_dir(member: Member) -> Path:
    """The cache folder of ``member``'s rows."""
    o = member.options
    key = json.dumps([member.target, o["config"], o["split"], o["field"], o["docs"],
                      o["revision"]])  # fmt: skip
    slug = member.target.replace("/", "--")
    return cache_dir() / "hub_corpora" / f"{slug}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def _cached(member: Member) -> HubEntry | None:
    path = entry_dir(member)
    if not check_entry(path, required=False).usable or not (path / DOCUMENTS).is_file():
        return None
    meta = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    return HubEntry(member, path, meta["revision"], meta["documents"], meta["fingerprint"], True)


def hub_revision(dataset: str, revision: str | None) -> str:
    """The commit sha of ``dataset`` at ``revision`` (None: the default branch); a missing
    dataset or revision is a UserError, no answer :class:`HubUnavailable`."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

    try:
        info = HfApi().dataset_info(dataset, revision=revision, timeout=REVISION_TIMEOUT_S)
    except (RepositoryNotFoundError, RevisionNotFoundError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        where = f"hub dataset {dataset!r} (revision {revision or 'default'})"
        raise UserError(f"{where}: {first}") from None
    except Exception as exc:  # any failure to get an answer counts as the hub not answering
        raise HubUnavailable(f"the hub did not answer ({type(exc).__name__})") from None
    return str(info.sha)


def _stream_texts(member: Member, revision: str) -> list[str]:
    """The first ``docs`` texts of the member's split, streamed at ``revision``."""
    import datasets

    o = member.options
    try:
        rows = datasets.load_dataset(
            member.target, o["config"] or None, split=o["split"], streaming=True,
            revision=revision, cache_dir=str(cache_dir() / "hub_corpora" / "datasets"),
        )  # fmt: skip
        texts = [
            _text(row, o["field"], f"{member.target} row {i}", member.spec)
            for i, row in enumerate(itertools.islice(rows, int(o["docs"])))
        ]
    except (ConnectionError, TimeoutError) as exc:
        raise HubUnavailable(f"streaming stopped ({type(exc).__name__})") from None
    except (ValueError, FileNotFoundError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"data {member.spec!r}: {first}") from None
    if not texts:
        raise UserError(f"data {member.spec!r}: split {o['split']!r} has no rows")
    return texts


_ENTRIES: dict[str, HubEntry] = {}


def hub_entry(member: Member) -> HubEntry:
    """``member``'s rows in the cache, streamed from the hub first where needed (see the module
    docstring); resolved once per process. Raises :class:`HubUnavailable`."""
    if member.spec in _ENTRIES:
        return _ENTRIES[member.spec]
    cached = _cached(member)
    why = offline_reason()
    if why is None:
        try:
            revision = hub_revision(member.target, member.options["revision"] or None)
        except HubUnavailable as exc:
            why = str(exc)
    if why is not None:
        if cached is None:
            raise HubUnavailable(f"{member.target} is not cached and {why}")
        _ENTRIES[member.spec] = cached
        return cached
    if cached is None or cached.revision != revision:
        texts = _stream_texts(member, revision)
        fingerprint = texts_fingerprint(texts)
        with atomic_dir(entry_dir(member), replace=True) as tmp:
            lines = "".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts)
            (tmp / DOCUMENTS).write_text(lines, encoding="utf-8")
            write_manifest(tmp, {"kind": "hub_corpus", "dataset": member.target,
                                 "revision": revision, "documents": len(texts),
                                 "fingerprint": fingerprint})  # fmt: skip
        cached = HubEntry(member, entry_dir(member), revision, len(texts), fingerprint, False)
    _ENTRIES[member.spec] = cached
    return cached


def check_readable(member: Member) -> None:
    """Without asking the hub: raise :class:`HubUnavailable` when offline mode is set and
    ``member`` is not cached (a dry run's view of the fallback rule)."""
    why = offline_reason()
    if why is not None and _cached(member) is None:
        raise HubUnavailable(f"{member.target} is not cached and {why}")


def hub_documents(member: Member) -> list[str]:
    """The texts of ``member`` (from the cache, fetched first where needed)."""
    entry = hub_entry(member)
    with (entry.path / DOCUMENTS).open(encoding="utf-8") as handle:
        return [json.loads(line)["text"] for line in handle if line.strip()]
