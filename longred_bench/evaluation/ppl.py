"""Long-document perplexity by token position, for an original or RoPE-extended model.

:func:`run_position_ppl` loads the model with :func:`longred_bench.models.loading.load` (so a
``rope`` extension is applied to the weights measured), cuts ``num_windows`` non-overlapping windows
of ``length`` tokens from long documents (:func:`longred_bench.data.texts.token_windows`: the first
window of every document before any second one; running text, no BOS token added), runs one forward
pass per window with no truncation, and averages the next-token NLL over position buckets of
``bucket`` tokens (:mod:`longred_bench.metrics.position_ppl`): 0-1K, 1K-2K, ... by default. A window
may be longer than the model's ``max_position_embeddings``: how a model does past its window is what
context extension is about, so nothing is cut (the original model's buckets past its window are the
baseline the extensions are compared with). Models without RoPE (learned absolute positions) cannot
run past their window; that is a ``UserError``.

Texts: a bare corpus name means its ``all`` split (``austen``: the six novels, 927K SmolLM2
tokens, the longest 207K; ``kjv``: 66 books, none longer than 54K tokens, so KJV cannot fill
windows of 64K; ``brown``: short texts, about 2K tokens each). These are measurement texts; a
model trained on part of a corpus (the suite's own pretraining) should be measured on a held-out
split instead, e.g. ``austen:test`` (Pride and Prejudice, 157K tokens). ``name:split``, a UTF-8
file path and ``random`` (token ids, smoke runs) are passed on as they are. The resolved source
is recorded in each record's ``corpus``.

Each record: ``{"kind": "ppl", "model", "rope", "corpus", "length", "bucket_start",
"bucket_end", "nll", "ppl", "n_tokens", "num_windows", "max_position_embeddings",
"rope_parameters", "dtype"}`` with
``bucket_end`` exclusive, ``nll`` the mean NLL (nats per token) of the predictions at positions
in the bucket, ``ppl = exp(nll)`` and ``n_tokens`` their number (the first bucket has one fewer
per window: position 0 is never predicted, so all buckets together hold
``num_windows * (length - 1)`` tokens). ``max_position_embeddings`` is the evaluated model's
window (the extended one when ``rope`` is given), ``rope_parameters`` its RoPE parameters (None
for a model without RoPE), ``dtype`` the one it ran in. Memory: the logits of a batch are
``batch_size * min(length, 4096) * vocab`` floats in the model's dtype (SmolLM2, 4096 tokens,
fp32: 0.8 GB): a longer window's are computed 4,096 positions at a time (:func:`window_nll`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from longred_bench.data.texts import CORPORA, token_windows
from longred_bench.errors import UserError
from longred_bench.metrics.position_ppl import (
    bucket_bounds,
    bucket_nll,
    mean_nll,
    next_token_nll,
    token_nll,
)

LOGIT_CHUNK = 4096
"""Positions whose vocabulary logits are held at once: a window's whole logits were ``length x
vocab`` floats (100K tokens of SmolLM2's 49K vocabulary: 20 GB in fp32, killed for memory)."""


def head_is_projection(model: Any, ids: torch.Tensor) -> bool:
    """Whether ``model``'s logits are its output projection of its decoder's last hidden states,
    read on the first two tokens of ``ids`` (a soft cap or a scale after the projection, as Gemma
    2's, Falcon-H1's or Cohere's, is not: such a model's logits come whole from the model)."""
    head = model.get_output_embeddings()
    decoder = model.get_decoder() if hasattr(model, "get_decoder") else None
    if head is None or decoder is None:
        return False
    start = ids[:1, :2]
    whole = model(input_ids=start, use_cache=False).logits
    projected = head(decoder(input_ids=start, use_cache=False).last_hidden_state)
    return projected.shape == whole.shape and torch.allclose(
        projected.float(), whole.float(), rtol=1e-3, atol=1e-3
    )


def window_nll(
    model: Any, ids: torch.Tensor, projection: bool | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(nll, valid)`` of :func:`next_token_nll` for the windows ``ids`` ``[batch, seq]``: the
    decoder's last hidden states once, then the output projection :data:`LOGIT_CHUNK` positions
    at a time (the whole logits where the window is no longer, or the model's logits are more
    than a projection: ``projection``, by default :func:`head_is_projection`)."""
    batch, seq = ids.shape
    if seq <= LOGIT_CHUNK or not (head_is_projection(model, ids) if projection is None
                                  else projection):  # fmt: skip
        return next_token_nll(model(input_ids=ids, use_cache=False).logits, ids)
    head, decoder = model.get_output_embeddings(), model.get_decoder()
    hidden = decoder(input_ids=ids, use_cache=False).last_hidden_state
    nll = torch.zeros(batch, seq, dtype=torch.float32, device=ids.device)
    for start in range(0, seq - 1, LOGIT_CHUNK):  # hidden[p] predicts ids[p + 1]
        end = min(start + LOGIT_CHUNK, seq - 1)
        labels = ids[:, start + 1 : end + 1]
        nll[:, start + 1 : end + 1] = token_nll(head(hidden[:, start:end]), labels)
    valid = torch.ones(batch, seq, dtype=torch.bool, device=ids.device)
    valid[:, 0] = False
    return nll, valid


def resolve_source(corpus: str) -> str:
    """The text source measured for ``corpus``: a bare corpus name means its ``all`` split."""
    return f"{corpus}:all" if corpus in CORPORA else corpus


def run_position_ppl(
    model_spec: str,
    *,
    rope: str | None = None,
    corpus: str = "austen",
    length: int = 4096,
    num_windows: int = 8,
    bucket: int = 1024,
    batch_size: int = 1,
    device: str = "cpu",
    progress: bool = True,
    dtype: str = "float32",
) -> list[dict[str, Any]]:
    """Perplexity by position bucket of ``model_spec`` (extended by ``rope``, run in ``dtype``)
    on long texts.

    Returns one record per bucket (see the module docstring), in position order.
    """
    if length < 2:
        raise UserError(f"length must be at least 2 tokens, got {length}")
    if bucket < 1:
        raise UserError(f"bucket size must be at least 1 token, got {bucket}")
    if num_windows < 1 or batch_size < 1:
        raise UserError(
            f"num_windows and batch_size must be at least 1 (got {num_windows}, {batch_size})"
        )
    from longred_bench.models.loading import load

    source = resolve_source(corpus)
    loaded = load(model_spec, rope=rope, device=device, dtype=getattr(torch, dtype))
    config = loaded.model.config
    window = getattr(config, "max_position_embeddings", None)
    if window is not None and length > window and not getattr(config, "rope_parameters", None):
        raise UserError(
            f"{model_spec} has learned absolute positions ({window}) and no RoPE: windows longer "
            f"than {window} tokens cannot run on it; use a length of at most {window}"
        )
    windows = token_windows(loaded.tokenizer, source, num_windows, length, measure="ppl")
    num_buckets = math.ceil(length / bucket)
    sums = torch.zeros(num_buckets, dtype=torch.float64)
    counts = torch.zeros(num_buckets, dtype=torch.int64)
    batches = windows.split(batch_size)
    projection = None  # read on the first window, once
    with torch.inference_mode():
        for ids in tqdm(
            batches, desc=f"ppl {model_spec} {rope or ''}".strip(), disable=not progress
        ):
            ids = ids.to(device)
            if projection is None:
                projection = length > LOGIT_CHUNK and head_is_projection(loaded.model, ids)
            nll, valid = window_nll(loaded.model, ids, projection)
            batch_sums, batch_counts = bucket_nll(nll, valid, bucket)
            sums += batch_sums.cpu()
            counts += batch_counts.cpu()
    means = mean_nll(sums, counts)
    rope_params = getattr(config, "rope_parameters", None)
    return [
        {
            "kind": "ppl",
            "model": model_spec,
            "rope": rope,
            "corpus": source,
            "length": length,
            "bucket_start": start,
            "bucket_end": end,
            "nll": float(means[k]),
            "ppl": math.exp(float(means[k])),
            "n_tokens": int(counts[k]),
            "num_windows": num_windows,
            "max_position_embeddings": window,
            "rope_parameters": dict(rope_params) if rope_params else None,
            "dtype": dtype,
        }
        for k, (start, end) in enumerate(bucket_bounds(length, bucket))
    ]


def pow2_floor(n: int) -> int:
    """The largest power of two not above ``n`` (1 for ``n < 2``): a suite's default length."""
    return 1 << (max(int(n), 1).bit_length() - 1)


def ppl_bucket(length: int) -> int:
    """1024-token position buckets, or 8 per window for windows shorter than 8192 tokens."""
    return 1024 if length >= 8192 else max(length // 8, 1)


def run_ppl_suite(
    model_spec: str,
    *,
    rope: str | None,
    lengths: list[int] | None,
    samples: int | None,
    corpus: str | None,
    batch_size: int,
    device: str,
    progress: bool,
    done_dir: Path | None = None,
    dtype: str = "float32",
) -> list[dict[str, Any]]:
    """``eval``'s ``ppl`` suite: :func:`run_position_ppl` at each length (default: the evaluated
    window rounded down to a power of two), ``samples`` windows (default 8) of ``corpus``
    (default ``austen``). With ``done_dir``, each finished length's records are kept there and
    read back on a rerun (an interrupted suite resumes)."""
    from longred_bench.cache import atomic_write_text

    if lengths is None:
        from longred_bench.models.loading import load

        window = load(model_spec, rope=rope).model.config.max_position_embeddings
        lengths = [pow2_floor(window)]
    corpus, windows = corpus or "austen", samples or 8
    records: list[dict[str, Any]] = []
    for length in sorted(lengths):
        saved = None if done_dir is None else done_dir / _saved_name(corpus, windows, length)
        if saved is not None and saved.is_file():
            records += json.loads(saved.read_text())
            continue
        measured = run_position_ppl(
            model_spec, rope=rope, corpus=corpus, length=length, num_windows=windows,
            bucket=ppl_bucket(length), batch_size=batch_size, device=device, progress=progress,
            dtype=dtype,
        )  # fmt: skip
        got = [{**record, "suite": "ppl"} for record in measured]
        if saved is not None:
            saved.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(saved, json.dumps(got))
        records += got
    return records


def _saved_name(corpus: str, windows: int, length: int) -> str:
    """The file a finished length's records are kept in: a registry corpus by its name, local
    texts by a hash of their paths and files (names, sizes, modification times:
    :func:`~longred_bench.results.files_stamp`), so texts replaced at their path are measured
    again, never answered from the old ones' records (a path's ``/`` made nested folders of the
    name too)."""
    from longred_bench.data.corpus_spec import local_paths
    from longred_bench.results import config_hash, files_stamp

    try:
        paths = local_paths(corpus)
    except UserError:
        paths = ()
    if not paths:
        return f"ppl-{corpus}-{windows}-{length}.json"
    files = {str(path): files_stamp(path, recursive=True) for path in paths}
    return f"ppl-{config_hash({'corpus': corpus, 'files': files})[:16]}-{windows}-{length}.json"


def run_ppl_config(
    cfg: Any, *, progress: bool, done_dir: Path | None = None
) -> list[dict[str, Any]]:
    """The ``ppl`` suite of evaluation ``cfg`` (an
    :class:`~longred_bench.evaluation.config.EvalConfig`): :func:`run_ppl_suite` at its settings."""
    return run_ppl_suite(
        cfg.model, rope=cfg.rope, lengths=list(cfg.lengths) if cfg.lengths else None,
        samples=cfg.samples, corpus=cfg.corpus, batch_size=cfg.batch_size or 1,
        device=cfg.device, progress=progress, done_dir=done_dir, dtype=cfg.resolved_dtype(),
    )  # fmt: skip
