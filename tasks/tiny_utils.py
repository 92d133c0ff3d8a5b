"""Dataset loaders for the ``longred_tiny_*`` lm-eval tasks (``custom_dataset: !function ...``).

Each loader builds one task's rows with :mod:`longred_bench.taskdata.tiny_tasks` from the ``test``
split of the default source (the State of the Union addresses, which no training recipe reads;
seed 1234, the task's number of rows: fixed, so every run scores the same samples) and returns
them as a ``test`` split. lm-eval passes the task's ``metadata`` and ``dataset_kwargs`` as keyword
arguments; only ``phrasing`` is read, by the passkey loader (``heldout``, the default, ``train``
or ``standard``: see :func:`longred_bench.taskdata.tiny_passkey.build_passkey`), the others are
ignored. A source missing from the cache raises :class:`longred_bench.errors.UserError` naming
``longred-bench data fetch --sources sotu``.
"""

from __future__ import annotations

from typing import Any

import datasets

from longred_bench.taskdata import tiny_tasks

Splits = dict[str, datasets.Dataset]


def _load(task: str, phrasing: str | None = None) -> Splits:
    return {"test": datasets.Dataset.from_list(tiny_tasks.build(task, phrasing=phrasing))}


def load_lastword(**metadata: Any) -> Splits:
    """Last-word choice: ``context`` (the passage before its last word), four ``choices`` (words
    of a similar frequency), ``gold``."""
    return _load("lastword")


def load_nextsent(**metadata: Any) -> Splits:
    """Next-sentence choice as multiple inputs: ``sentence``, four ``contexts`` (passages of the
    same address), ``gold`` (the passage it follows)."""
    return _load("nextsent")


def load_swap(**metadata: Any) -> Splits:
    """Minimal pairs, two adjacent words swapped: ``context``, two ``choices``, ``gold``."""
    return _load("swap")


def load_replace(**metadata: Any) -> Splits:
    """Minimal pairs, one content word replaced by a frequent one: ``context``, two ``choices``,
    ``gold``."""
    return _load("replace")


def load_passkey(**metadata: Any) -> Splits:
    """In-window passkey: ``prompt`` (passage with the key, the other choices and the question),
    ``choices``, ``gold``, ``key``, in the ``phrasing`` of the metadata (default ``heldout``)."""
    return _load("passkey", metadata.get("phrasing") or None)


def load_ppl(**metadata: Any) -> Splits:
    """Held-out prose passages for rolling perplexity: ``text``."""
    return _load("ppl")
