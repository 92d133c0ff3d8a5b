"""Loader and scorer of the ``longred_niah`` lm-eval task (needle depth x context length grid).

lm-eval calls ``custom_dataset`` with the task's metadata as keyword arguments: the YAML's
``version``, whatever a run passes with ``--metadata`` (or ``TaskManager(metadata=...)``) and,
when lm-eval builds the task manager itself, the ``--model_args`` keys. Keys read here:

==================  =========================================================================
``tokenizer``       model spec whose tokenizer sizes the prompts (zoo name, HF directory,
                    ``.gguf`` file or hub id); required. Without it ``pretrained`` (the ``hf``
                    model's ``--model_args``) is used, and without either a ``UserError`` says
                    to pass ``--metadata '{"tokenizer": ...}'``.
``lengths``         context lengths in tokens (prompt + answer), default 1024, 2048, 4096, 8192
``depths``          needle depths in percent, default 0, 10, ..., 100
``niah_samples``    samples per (length, depth) cell, default 4
``seed``            generator seed, default 0
``corpus``          haystack prose: ``brown`` (default), ``austen`` or ``kjv``
==================  =========================================================================

Other keys are ignored (a run's metadata goes to every task it loads). Samples come from
:mod:`longred_bench.taskdata.niah_grid` and are cached on disk per tokenizer and cell.
"""

from __future__ import annotations

from typing import Any

import datasets

from longred_bench.errors import UserError
from longred_bench.taskdata import niah_grid


def _spec(metadata: dict[str, Any]) -> str:
    for key in ("tokenizer", "pretrained"):
        value = metadata.get(key)
        if isinstance(value, str) and value:
            return value
    raise UserError(
        "longred_niah sizes its prompts with the evaluated model's tokenizer: pass "
        '--metadata \'{"tokenizer": "MODEL"}\' (zoo name, HF directory, .gguf file or hub id)'
    )


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, str):
        return [v for v in value.replace(",", " ").split() if v]
    if isinstance(value, (int, float)):
        return [value]
    return list(value)


def load_niah(**metadata: Any) -> dict[str, datasets.Dataset]:
    """The ``test`` split: one document per sample of the grid (see the module docstring)."""
    from longred_bench.models.loading import load_tokenizer

    seed = metadata.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, (int, str)) or not str(seed).isdigit():
        raise UserError(f"longred_niah: seed must be a non-negative integer, got {seed!r}")
    tokenizer = load_tokenizer(_spec(metadata))
    samples = niah_grid.generate_grid(
        tokenizer,
        lengths=_as_list(metadata.get("lengths", niah_grid.DEFAULT_LENGTHS)),
        depths=_as_list(metadata.get("depths", niah_grid.DEFAULT_DEPTHS)),
        num_samples=metadata.get("niah_samples", niah_grid.DEFAULT_SAMPLES),
        seed=int(seed),
        corpus=str(metadata.get("corpus", "brown")),
    )
    return {"test": datasets.Dataset.from_list([niah_grid.lm_eval_doc(s) for s in samples])}


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, float]:
    """``score``: 100 if the needle value is in the generated text, else 0."""
    return {"score": niah_grid.score_response(results[0], doc["outputs"])}
