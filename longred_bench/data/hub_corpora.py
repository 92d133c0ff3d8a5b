"""Hub datasets as training data: an ``hf:`` member (:mod:`longred_bench.data.corpus_spec`) is
streamed with ``datasets`` at a resolved revision, its first ``docs`` rows kept as one cache
entry, and read from there afterwards.

Entry: ``<cache>/hub_corpora/<dataset>-<key>/`` (the key hashes the dataset, config, split,
field, ``docs`` and the revision asked for) holding ``documents.jsonl`` (``{"text": ...}`` per
line) and a manifest that records the commit the rows were read at (``revision``) and a
fingerprint of the texts. Where the hub answers, the dataset's current commit for the asked
revision is looked up first and a missing entry is streamed at that commit. Where it does not
(``HF_HUB_OFFLINE`` or ``HF_DATASETS_OFFLINE`` set, or no answer), an entry already cached is
used as it is, and with none the member is unavailable (:class:`HubUnavailable`), so the
source's fallback applies.

A complete entry is immutable: every rank of every training job may be reading it, so it is
never replaced. Where the hub has moved on to another commit, the cached rows are still read
(their commit is the one recorded) and a warning says to delete the entry to read the new
commit. Building is exclusive across processes: the builder holds
:func:`~longred_bench.cache.build_lock` (a ``flock`` on ``.<entry>.lock`` beside the entry)
while it checks for the entry and streams it, so the dataset is streamed once; a process that
finds the entry complete once it holds the lock reads it instead. The rows are written to a
temporary sibling and renamed into place whole (:func:`~longred_bench.cache.atomic_dir`), so a
reader sees no entry or a complete one; only a damaged entry (failing its manifest) is replaced.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from longred_bench.cache import atomic_dir, build_lock, cache_dir, check_entry, warn, write_manifest
from longred_bench.data.corpus_spec import Member
from longred_bench.data.local_corpora import _text, texts_fingerprint
from longred_bench.errors import UserError

DOCUMENTS = "documents.jsonl"
DATA_FALLBACK = "LONGRED_DATA_FALLBACK"
"""Set (``1``) by jobs ``--emit-slurm`` planned on the training data's offline fallbacks: each
``hf:`` member not cached is unavailable, so every node trains on the fallback, while the hub
stays open to what needs it (``paper_short``'s datasets, which ``HF_DATASETS_OFFLINE`` refuses)."""
OFFLINE_VARS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", DATA_FALLBACK)
NO_FALLBACK = "LONGRED_NO_FALLBACK"
"""Set (``1``) by jobs ``--emit-slurm`` planned with the hub's model or data: where the hub cannot
give them, and no offline variable asks for the fallback, the job stops instead of taking it."""
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


def is_cached(member: Member) -> bool:
    """Whether ``member``'s rows are in the cache, complete (read without asking the hub)."""
    return _cached(member) is not None


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
_ANSWERED: dict[str, str] = {}
"""The commit :func:`check_available` was given for a member not cached, taken by the member's
next :func:`hub_entry` in this process instead of asking the hub again."""


def _kept(cached: HubEntry, revision: str) -> HubEntry:
    """The complete entry ``cached`` as read with the hub answering ``revision``: read as it is
    (see the module docstring), with a warning where the hub has moved to another commit."""
    if cached.revision != revision:
        warn(
            f"data {cached.member.spec!r}: reading the rows cached at commit {cached.revision}; "
            f"the hub is now at {revision} (delete {cached.path} to read that)"
        )
    return replace(cached, offline=False)


def _build(member: Member, revision: str) -> HubEntry:
    """Stream ``member`` at ``revision`` into its entry, unless another process has built it
    by the time this one holds the entry's lock (see the module docstring)."""
    path = entry_dir(member)
    with build_lock(path, f"waiting for another process streaming {member.target} to {path}"):
        built = _cached(member)
        if built is not None:
            return _kept(built, revision)
        texts = _stream_texts(member, revision)
        # Only an entry failing its manifest is replaced; decided now, after the stream, so that
        # one another process completed meanwhile (where locks are refused) is left alone.
        done = _cached(member)
        if done is not None:
            return _kept(done, revision)
        with atomic_dir(path, replace=path.exists()) as tmp:
            lines = "".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts)
            (tmp / DOCUMENTS).write_text(lines, encoding="utf-8")
            write_manifest(tmp, {"kind": "hub_corpus", "dataset": member.target,
                                 "revision": revision, "documents": len(texts),
                                 "fingerprint": texts_fingerprint(texts)})  # fmt: skip
    # Ours, or where the file system refuses locks, another process's installed first.
    installed = _cached(member)
    if installed is None:
        raise UserError(
            f"{path} was removed or damaged as soon as it was written: another "
            "process is changing the cache; run again once it is done"
        )
    return replace(installed, offline=False)


def hub_entry(member: Member) -> HubEntry:
    """``member``'s rows in the cache, streamed from the hub first where needed (see the module
    docstring); resolved once per process. Raises :class:`HubUnavailable`."""
    if member.spec in _ENTRIES:
        return _ENTRIES[member.spec]
    cached = _cached(member)
    why = offline_reason()
    if why is None:
        try:
            revision = _ANSWERED.pop(member.spec, None) or hub_revision(
                member.target, member.options["revision"] or None
            )
        except HubUnavailable as exc:
            why = str(exc)
    if why is not None:
        if cached is None:
            raise HubUnavailable(f"{member.target} is not cached and {why}")
        entry = cached
    elif cached is not None:
        entry = _kept(cached, revision)
    else:
        entry = _build(member, revision)
    _ENTRIES[member.spec] = entry
    return entry


def check_available(member: Member) -> None:
    """Raise :class:`HubUnavailable` where ``member``'s rows are neither cached nor given by the
    hub (an offline variable set, or no answer to the revision asked); nothing is streamed."""
    if _cached(member) is not None:
        return
    why = offline_reason()
    if why is not None:
        raise HubUnavailable(f"{member.target} is not cached and {why}")
    _ANSWERED[member.spec] = hub_revision(member.target, member.options["revision"] or None)


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
