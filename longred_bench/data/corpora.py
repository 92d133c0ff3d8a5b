"""Cached corpora as documents with deterministic document-level splits, and zoo model paths.

A corpus entry (``<cache>/corpora/<name>/``) holds ``documents.jsonl``: one JSON object per
line with ``doc_id``, ``title``, ``text`` and ``meta`` (a string-to-string mapping).

Split rule (the same for every corpus): documents are ordered by the sha256 of
``"<corpus>/<doc_id>"``; the first ``k`` in that order form ``validation``, the next ``k``
form ``test`` and the rest ``train``, with ``k = max(1, round(n / 10))``. That is 80/10/10 for
large corpora (Brown: 400/50/50, KJV: 52/7/7, State of the Union: 187/23/23) and never leaves a
split empty for three or more documents (Austen's six novels: 4/1/1). The assignment depends
only on the document ids, so it is identical on every machine and run.

Every read checks the entry against its manifest's file records first (sizes always, sha256
when the entry is small; :func:`longred_bench.cache.check_entry`) and names the repair command
when they disagree, rather than failing later inside a parser.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from longred_bench.cache import MANIFEST_FILE, atomic_write_text, cache_dir, check_entry
from longred_bench.data.sources import MODEL_ZOO, SOURCES
from longred_bench.errors import UserError

Split = Literal["all", "train", "validation", "test"]
SPLITS: tuple[str, ...] = ("all", "train", "validation", "test")
DOCUMENTS_FILE = "documents.jsonl"


@dataclass(frozen=True)
class Document:
    """One document of a corpus; ``meta`` holds source-specific string fields."""

    corpus: str
    doc_id: str
    title: str
    text: str
    meta: Mapping[str, str] = field(default_factory=dict, hash=False)


def corpus_names() -> list[str]:
    """Names of the sources that are text corpora."""
    return [name for name, source in SOURCES.items() if source.kind == "corpus"]


def entry_present(path: Path) -> bool:
    """An entry counts as present only once renamed into place with its manifest inside."""
    return (path / MANIFEST_FILE).is_file()


def write_documents(path: Path, documents: Iterable[Document]) -> int:
    """Write ``documents`` as JSON lines to ``path`` (atomically); return how many."""
    documents = list(documents)
    ids = [d.doc_id for d in documents]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate document ids in {path}")
    lines = [
        json.dumps(
            {"doc_id": d.doc_id, "title": d.title, "text": d.text, "meta": dict(d.meta)},
            ensure_ascii=False,
        )
        for d in documents
    ]
    atomic_write_text(path, "".join(line + "\n" for line in lines))
    return len(lines)


def read_documents(path: Path, corpus: str) -> list[Document]:
    """Read a ``documents.jsonl`` file written by :func:`write_documents`.

    A line that is not a complete document record is a :class:`UserError` naming the file and
    line (a truncated or damaged file).
    """
    documents = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                record = json.loads(line)
                documents.append(
                    Document(
                        corpus=corpus,
                        doc_id=record["doc_id"],
                        title=record["title"],
                        text=record["text"],
                        meta=record["meta"],
                    )
                )
            except (ValueError, KeyError, TypeError) as exc:
                raise UserError(
                    f"{path} line {number} is not a document record ({type(exc).__name__}); "
                    f"the file is corrupt: {fix_hint(corpus)}"
                ) from None
    return documents


def _split_key(corpus: str, doc_id: str) -> str:
    return hashlib.sha256(f"{corpus}/{doc_id}".encode()).hexdigest()


def assign_splits(corpus: str, doc_ids: Iterable[str]) -> dict[str, str]:
    """Map each document id to ``train``/``validation``/``test`` by the module's split rule."""
    ordered = sorted(doc_ids, key=lambda doc_id: _split_key(corpus, doc_id))
    if len(ordered) < 3:
        raise ValueError(f"corpus {corpus!r} has {len(ordered)} documents; splits need 3")
    k = max(1, round(len(ordered) / 10))
    assignment = {doc_id: "validation" for doc_id in ordered[:k]}
    assignment.update({doc_id: "test" for doc_id in ordered[k : 2 * k]})
    assignment.update({doc_id: "train" for doc_id in ordered[2 * k :]})
    return assignment


def _entry(name: str, cache: Path | None) -> Path:
    return (cache if cache is not None else cache_dir()) / SOURCES[name].entry


def fix_hint(source: str) -> str:
    """The command that replaces a damaged entry of ``source``."""
    return f"run `longred-bench data fetch --sources {source} --force`"


def checked_entry(source: str, what: str, cache: Path | None) -> Path:
    """The entry of ``source`` after checking it against its manifest's file records.

    Raises :class:`UserError` (one line: the entry, the file, the fix) if it is absent or does
    not match its records. Entries of older versions without sha256 records are size-checked
    only (where sizes were recorded) and still returned.
    """
    entry = _entry(source, cache)
    result = check_entry(entry)
    if result.status == "missing":
        raise UserError(
            f"{what} is not cached under {entry.parent}; "
            f"run `longred-bench data fetch --sources {source}`"
        )
    if not result.usable:
        raise UserError(f"cache entry {entry} is corrupt: {result.detail}; {fix_hint(source)}")
    return entry


def load_documents(
    corpus: str, split: Split = "all", *, cache: Path | None = None
) -> list[Document]:
    """Return the documents of a cached corpus in one split, in their original order."""
    if corpus not in corpus_names():
        raise UserError(f"unknown corpus {corpus!r}; corpora: {', '.join(corpus_names())}")
    if split not in SPLITS:
        raise UserError(f"unknown split {split!r}; splits: {', '.join(SPLITS)}")
    entry = checked_entry(corpus, f"corpus {corpus!r}", cache)
    documents = read_documents(entry / DOCUMENTS_FILE, corpus)
    if split == "all":
        return documents
    assignment = assign_splits(corpus, [d.doc_id for d in documents])
    return [d for d in documents if assignment[d.doc_id] == split]


def model_dir(name: str, *, cache: Path | None = None) -> Path:
    """Return the cached directory of zoo model ``name`` (loadable with ``from_pretrained``)."""
    if name not in MODEL_ZOO:
        raise UserError(f"unknown zoo model {name!r}; models: {', '.join(MODEL_ZOO)}")
    return checked_entry(MODEL_ZOO[name], f"model {name!r}", cache)


def benchmarks_dir(*, cache: Path | None = None) -> Path:
    """Return the cached benchmark data dir (``hf_datasets/`` and ``oe_eval_tasks/`` inside)."""
    return checked_entry("benchmarks", "benchmark data", cache)
