"""Dataset loaders for the ``longred_tiny_*`` lm-eval tasks (``custom_dataset: !function ...``).

Each loader builds one task's rows with :mod:`longred_bench.taskdata.tiny_tasks` from the ``test``
splits of the default corpus mix (Brown + Austen, 500 rows, seed 1234: fixed, so every run scores
the same samples) and returns them as a ``test`` split. lm-eval passes the task's ``metadata`` and
``dataset_kwargs`` as keyword arguments; they are ignored. A corpus missing from the cache raises
:class:`longred_bench.errors.UserError` naming ``longred-bench data fetch --sources brown austen``.
"""

from __future__ import annotations

from typing import Any

import datasets

from longred_bench.taskdata import tiny_tasks

Splits = dict[str, datasets.Dataset]


def _load(task: str) -> Splits:
    return {"test": datasets.Dataset.from_list(tiny_tasks.build(task))}


def load_cloze(**metadata: Any) -> Splits:
    """Last-word cloze passages: ``context``, ``target`` (the word, with a leading space)."""
    return _load("cloze")


def load_nextsent(**metadata: Any) -> Splits:
    """Next-sentence choice: ``context``, four ``choices``, ``gold``."""
    return _load("nextsent")


def load_passkey(**metadata: Any) -> Splits:
    """In-window passkey: ``prompt`` (passage with the key and the question), ``choices``,
    ``gold``, ``key``."""
    return _load("passkey")


def load_ppl(**metadata: Any) -> Splits:
    """Held-out prose passages for rolling perplexity: ``text``."""
    return _load("ppl")
