"""Samples of the ``longred_short_tiny`` lm-eval tasks, built from held-out prose no recipe reads.

Six short-text tasks that a small model pretrained on prose (the suite's tiny Llama, SmolLM2-135M)
scores clearly above chance. Every sample is a verbatim passage of a ``test``-split document of a
cached corpus (:func:`longred_bench.data.corpora.load_documents`); ``train`` documents are never
read. The default source is the State of the Union addresses (``sotu``), which no training
recipe of the suite reads (its recipes read Brown, Austen and the KJV), so no compared recipe is
in-domain on the suite; every distractor comes from the same source as its passage (``nextsent``:
the same address). This module is the entry point: :func:`build` builds a task's rows and
:func:`chance_accuracy` scores guessing. Each task has its own module, with its rules in the
docstring:

- ``lastword`` (the passage's last word among four of a similar frequency):
  :mod:`longred_bench.taskdata.tiny_lastword`.
- ``nextsent`` (which of four passages of the same address a sentence follows):
  :mod:`longred_bench.taskdata.tiny_nextsent`.
- ``swap`` and ``replace`` (minimal pairs, chance 0.5): :mod:`longred_bench.taskdata.tiny_pairs`.
- ``passkey`` (the key among four planted numbers): :mod:`longred_bench.taskdata.tiny_passkey`.
- ``ppl`` (passages scored by rolling log-likelihood): :mod:`longred_bench.taskdata.tiny_ppl`.

Passages, and the seeded sampling that picks them, are in
:mod:`longred_bench.taskdata.tiny_sampling`: a build is identical on every machine and run. The
default is the ``sotu`` test split (23 addresses, 175K words), seed 1234, ``n`` per task
:data:`SIZES` (1,000 for the choice tasks, so an accuracy's 95% interval is at most +-3.1
points; 500 for ppl). Every prompt with its answer fits in 256 tokens of tiny-base's tokenizer
and of SmolLM2's (checked by the tests), so a run scores every row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from longred_bench.cache import cache_dir
from longred_bench.data.corpora import Document, corpus_names, load_documents
from longred_bench.errors import UserError
from longred_bench.taskdata.tiny_lastword import build_lastword
from longred_bench.taskdata.tiny_nextsent import build_nextsent
from longred_bench.taskdata.tiny_pairs import build_pairs
from longred_bench.taskdata.tiny_passkey import (
    DEFAULT_PASSKEY_PHRASING,
    PASSKEY_QUESTION,
    PASSKEY_SENTENCE,
    build_passkey,
)
from longred_bench.taskdata.tiny_ppl import build_ppl
from longred_bench.taskdata.tiny_sampling import DEFAULT_N, DEFAULT_SEED
from longred_bench.taskdata.tiny_store import load_or_build, rows_path

__all__ = [
    "BUILDERS",
    "DEFAULT_CORPORA",
    "DEFAULT_N",
    "DEFAULT_PASSKEY_PHRASING",
    "DEFAULT_SEED",
    "PASSKEY_QUESTION",
    "PASSKEY_SENTENCE",
    "SIZES",
    "TASKS",
    "build",
    "chance_accuracy",
    "held_out_documents",
]

TASKS: tuple[str, ...] = ("lastword", "nextsent", "swap", "replace", "passkey", "ppl")
DEFAULT_CORPORA: tuple[str, ...] = ("sotu",)
# Rows per task when ``n`` is not given: a choice task has 1,000, so a 95% interval of an
# accuracy is at most +-3.1 points (1.96 * sqrt(0.25 / 1000) = 0.031), and nextsent has about
# 1,070 windows in the test split; ppl has 500 passages of 80-120 words.
SIZES: dict[str, int] = {
    "lastword": 1000, "nextsent": 1000, "swap": 1000, "replace": 1000, "passkey": 1000, "ppl": 500,
}  # fmt: skip


BUILDERS: dict[str, Callable[..., list[dict[str, Any]]]] = {
    "lastword": build_lastword,
    "nextsent": build_nextsent,
    "swap": partial(build_pairs, "swap"),
    "replace": partial(build_pairs, "replace"),
    "passkey": build_passkey,
    "ppl": build_ppl,
}


def held_out_documents(
    corpora: Sequence[str] = DEFAULT_CORPORA, *, cache: Path | None = None
) -> list[Document]:
    """The ``test``-split documents of ``corpora``, corpus by corpus.

    A corpus missing from the cache raises a :class:`UserError` naming the fetch of the whole mix.
    """
    unknown = [c for c in corpora if c not in corpus_names()]
    if unknown or not corpora:
        raise UserError(f"unknown corpora {unknown or list(corpora)}; corpora: {corpus_names()}")
    documents: list[Document] = []
    for corpus in corpora:
        try:
            documents.extend(load_documents(corpus, "test", cache=cache))
        except UserError:
            raise UserError(
                f"the tiny tasks read the test split of {', '.join(corpora)}, and {corpus!r} is "
                f"not cached; run `longred-bench data fetch --sources {' '.join(corpora)}`"
            ) from None
    return documents


def build(
    task: str,
    corpora: Sequence[str] = DEFAULT_CORPORA,
    n: int | None = None,
    seed: int = DEFAULT_SEED,
    *,
    cache: Path | None = None,
    phrasing: str | None = None,
) -> list[dict[str, Any]]:
    """The rows of tiny task ``task`` built from the test splits of ``corpora``; ``phrasing``
    (passkey only; default ``heldout``) names the passkey's strings; ``n`` rows (default: the
    task's :data:`SIZES`). Built once per cache root and code
    (:mod:`longred_bench.taskdata.tiny_store`), then read from there."""
    if task not in BUILDERS:
        raise UserError(f"unknown tiny task {task!r}; tasks: {', '.join(TASKS)}")
    if phrasing is not None and task != "passkey":
        raise UserError(f"a phrasing is for the tiny passkey task only, not {task}")
    n = SIZES[task] if n is None else n
    if task == "passkey":
        phrasing = phrasing or DEFAULT_PASSKEY_PHRASING

    def rows() -> list[dict[str, Any]]:
        documents = held_out_documents(corpora, cache=cache)
        if task == "passkey":
            return build_passkey(documents, n, seed, phrasing=phrasing)
        return BUILDERS[task](documents, n, seed)

    root = cache if cache is not None else cache_dir()
    return load_or_build(rows_path(root, task, corpora, n, seed, phrasing), n, rows)


def chance_accuracy(task: str, rows: Sequence[dict[str, Any]]) -> float:
    """Expected ``acc`` of guessing one of a row's choices uniformly (every task but ``ppl``)."""
    if task == "nextsent":
        return sum(1 / len(row["contexts"]) for row in rows) / len(rows)
    if task in ("lastword", "swap", "replace", "passkey"):
        return sum(1 / len(row["choices"]) for row in rows) / len(rows)
    raise UserError(
        f"tiny task {task!r} has no accuracy; tasks with one: lastword, nextsent, swap, replace, "
        "passkey"
    )
