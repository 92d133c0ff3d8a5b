"""Recipe ``merge`` (LongReD Table 7's "model merging" baseline): the weights of a trained
extended model interpolated with the original's, no optimizer.

``merged = merge_weight * trained + (1 - merge_weight) * original`` for every tensor
(:func:`merge_weights`), where ``trained`` is ``merge_with`` (a RoPE-extended checkpoint, e.g.
CPT's) and ``original`` the config's ``model``. The merged model keeps the trained model's config,
so its extended RoPE: ``merge_weight = 1`` is the trained model, ``0`` the original weights under
the extended RoPE (a zero-shot extension). :func:`merge_run` writes ``DIR/final`` (weights, config,
tokenizer), ``DIR/run.json`` and a one-record ``DIR/metrics.jsonl`` (step 0, 0 tokens), so a merge
is cached and reused like any training run.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
import yaml

from longred_bench.cache import atomic_dir, atomic_write_text
from longred_bench.errors import UserError
from longred_bench.results import Provenance
from longred_bench.training.config import TrainConfig


def merge_weights(
    original: dict[str, torch.Tensor], trained: dict[str, torch.Tensor], weight: float
) -> dict[str, torch.Tensor]:
    """``weight * trained + (1 - weight) * original`` per tensor, computed in fp32 and returned in
    ``trained``'s dtypes and devices; a UserError naming the first tensor the two do not share
    in shape."""
    missing = sorted(set(original) ^ set(trained))
    if missing:
        raise UserError(
            f"merge: the two models do not have the same weights (e.g. {missing[0]}): merge a "
            "model with a checkpoint trained from it"
        )
    out = {}
    for name, tensor in trained.items():
        base = original[name]
        if base.shape != tensor.shape:
            raise UserError(
                f"merge: {name} has shape {tuple(base.shape)} in the original and "
                f"{tuple(tensor.shape)} in the trained model"
            )
        mixed = weight * tensor.float() + (1.0 - weight) * base.to(tensor.device).float()
        out[name] = mixed.to(tensor.dtype)
    return out


def _weighed(config: dict[str, Any]) -> dict[str, Any]:
    """A merge's config without what decides nothing it writes: the profile's name, the
    checkpoint settings (a finished merge is kept under others, as a finished run is)."""
    from longred_bench.training.config import BOOKKEEPING, LABEL_KEYS

    return {k: v for k, v in config.items() if k not in (*LABEL_KEYS, *BOOKKEEPING)}


def check_out(cfg: TrainConfig, out: Path) -> None:
    """Refuse an ``out`` that holds another run (a trained one, or a merge of another config):
    a merge wrote over its ``final/``, ``config.yaml`` and records. The same merge is written
    again."""
    from longred_bench.results import config_hash

    saved = out / "config.yaml"
    if not any((out / name).exists() for name in ("config.yaml", "final", "checkpoints")):
        return
    try:
        previous = yaml.safe_load(saved.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        previous = None
    if not isinstance(previous, dict) or config_hash(_weighed(previous)) != config_hash(
        _weighed(cfg.to_dict())
    ):
        what = f"a {previous['recipe']} run" if isinstance(previous, dict) and previous.get(
            "recipe") else "another run"  # fmt: skip
        raise UserError(f"{out} holds {what} of another config: give the merge a new --out "
                        "(nothing was written)")  # fmt: skip


def merge_run(cfg: TrainConfig, out: Path, *, progress: bool = True) -> Path:
    """Write the merge of ``cfg`` into ``out`` (module docstring); returns ``out/final``."""
    from longred_bench.models.loading import load

    if not cfg.merge_with:
        raise UserError("recipe merge needs merge_with=DIR (the trained extended model)")
    check_out(cfg, out)
    start = time.perf_counter()
    prov = asdict(Provenance.collect(cfg.to_dict(), seed=cfg.seed, device="cpu"))
    original = load(cfg.model)
    trained = load(cfg.merge_with)
    merged = merge_weights(
        original.model.state_dict(), trained.model.state_dict(), cfg.merge_weight
    )
    model = trained.model
    model.load_state_dict(merged)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "config.yaml", yaml.safe_dump(cfg.to_dict(), sort_keys=True))
    seconds = round(time.perf_counter() - start, 2)
    info = {"tokens": 0, "seconds": seconds, "merge_with": str(cfg.merge_with),
            "merge_weight": cfg.merge_weight, "provenance": prov}  # fmt: skip
    atomic_write_text(out / "metrics.jsonl", json.dumps({"step": 0, "tokens": 0}) + "\n")
    atomic_write_text(out / "run.json", json.dumps(info, indent=2))
    final = out / "final"
    with atomic_dir(final, replace=True) as tmp:
        model.save_pretrained(tmp)
        trained.tokenizer.save_pretrained(tmp)
    if progress:
        print(f"[merge] {cfg.merge_weight:g} x {cfg.merge_with} + "
              f"{1 - cfg.merge_weight:g} x {cfg.model} -> {final}", flush=True)  # fmt: skip
    return final
