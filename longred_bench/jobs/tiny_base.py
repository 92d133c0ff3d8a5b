"""``tiny-base``: the suite's own pretrained model, built on first use and cached by config hash.

It is the ``pretrain`` recipe at profile ``tiny`` (``training/recipes/pretrain.yaml``): a 4-layer
Llama with GQA, window 256, RoPE base 1e4, a byte-level BPE tokenizer trained on the corpora's
``train`` splits, pretrained on prose plus in-window retrieval examples with a cosine schedule.
The result lives in ``$LONGRED_CACHE/models/tiny-base-<hash>/final``; the same config and seed
give the same weights on one machine. ``longred-bench train --recipe pretrain --profile tiny
--out DIR`` builds the same model elsewhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from longred_bench.cache import build_lock, cache_dir, write_manifest
from longred_bench.errors import UserError
from longred_bench.models.builders import register_builder
from longred_bench.results import config_hash

if TYPE_CHECKING:
    from longred_bench.training.config import TrainConfig

LONGER = 1.5  # the convergence check's run is this many times as long
SUITE_BUILT = ("tiny-base",)
"""Zoo models the suite trains itself: results measured on one are tied to its build."""


def build_identity(name: str) -> str:
    """What a model spec names: for a model the suite builds (``tiny-base``) its build, the name
    of its cache directory (keyed by its config); any other spec is itself."""
    return tiny_base_run_dir().name if name == "tiny-base" else name


def tiny_base_run_dir() -> Path:
    """Where the tiny base model is (or will be) trained: keyed by its resolved config."""
    from longred_bench.training.config import resolve_config
    from longred_bench.training.versions import (
        COPY_MIX_VERSION,
        RETRIEVAL_VERSION,
        TOKENIZER_VERSION,
    )

    cfg = resolve_config("pretrain", profile="tiny")
    versions = {"tokenizer_version": TOKENIZER_VERSION, "retrieval": RETRIEVAL_VERSION}
    if cfg.copy_fraction:
        versions["copy_mix"] = COPY_MIX_VERSION
    key = config_hash({**cfg.to_dict(), **versions})
    return cache_dir() / "models" / f"tiny-base-{key}"


def tiny_base_dir(*, build: bool = True, progress: bool = True) -> Path:
    """The Hugging Face directory of ``tiny-base``, pretraining it first if it is not cached
    (about 15 minutes on 2 CPU cores; an interrupted build resumes from its checkpoint)."""
    from longred_bench.jobs.train import run_training
    from longred_bench.training.checkpoint import latest_checkpoint
    from longred_bench.training.config import resolve_config

    run = tiny_base_run_dir()
    final = run / "final"
    if (final / "config.json").is_file():
        return final
    if not build:
        raise UserError(
            "tiny-base is not built yet: run `longred-bench train --recipe pretrain --profile "
            "tiny` or load it once (about 15 minutes on 2 CPU cores)"
        )
    waiting = f"waiting for another process building tiny-base in {run}"
    with build_lock(run, waiting):  # parallel workers: one builds, the others wait and find it
        if (final / "config.json").is_file():
            return final
        cfg = resolve_config("pretrain", profile="tiny")
        resume = latest_checkpoint(run) is not None
        print(f"{'resuming the build of' if resume else 'building'} tiny-base in {run} (about "
              "15 min on 2 CPU cores, once: cached for later runs; Ctrl-C keeps its checkpoints, "
              "and the next call resumes from them)", flush=True)  # fmt: skip
        final = run_training(cfg, run, resume=resume, progress=progress)
        write_manifest(final, {"kind": "model", "model": "tiny-base"})  # records for verify
    return final


def tiny_base_longer_dir(*, progress: bool = True) -> Path:
    """The run directory of tiny-base continued to 1.5x its steps at its constant-tail learning
    rate (the run a convergence check compares it with; about half a build more on 2 CPU cores,
    cached beside tiny-base; an interrupted continuation resumes). Builds tiny-base first."""
    from longred_bench.jobs.train import run_training
    from longred_bench.training.checkpoint import latest_checkpoint
    from longred_bench.training.config import resolve_config
    from longred_bench.training.loop import continue_run

    tiny_base_dir(progress=progress)
    run = tiny_base_run_dir()
    out = run / "longer"
    cfg = resolve_config("pretrain", profile="tiny")
    longer = cfg.replace(steps=round(cfg.steps * LONGER))
    if (out / "final" / "config.json").is_file():
        return out
    with build_lock(out, f"waiting for another process continuing tiny-base in {out}"):
        if (out / "final" / "config.json").is_file():
            return out
        if latest_checkpoint(out) is None:
            continue_run(run, out, longer)
        print(f"continuing tiny-base to {longer.steps} steps in {out} (convergence check)")
        run_training(longer, out, resume=True, progress=progress)
    return out


register_builder("tiny-base", tiny_base_dir)


def plan_tokenizer(cfg: TrainConfig) -> Any:
    """The tokenizer a dry run counts the data with where the generic rule
    (:func:`~longred_bench.training.data_plan.local_tokenizer`) cannot find it: tiny-base's,
    once built (a dry run never builds it); else None."""
    if cfg.recipe == "pretrain" or cfg.model != "tiny-base":
        return None
    from longred_bench.models.loading import load_tokenizer

    try:
        return load_tokenizer(str(tiny_base_dir(build=False)))
    except UserError:
        return None
