"""``train``: a recipe's training run with its phases, then its loss curves (``curves.png``).

LongRecipe with ``anchors: [measured]`` first measures its anchor types
(:func:`measure_anchors`): a brief full-length ``cpt`` run of ``impact_steps`` steps into
``DIR/impact/``, then the per-token logit change between the original and that briefly extended
model over ``IMPACT_WINDOWS`` D1 windows of the extended length
(:mod:`longred_bench.training.impactful_tokens`), written to ``DIR/impact.json`` and to the run's
``run.json``; a resumed run reads it back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from longred_bench.reports.curves import plot_curves
from longred_bench.training.config import TrainConfig
from longred_bench.training.loop import METRICS, train
from longred_bench.training.pretrain.induction import pretrain_phases

IMPACT_WINDOWS = 32
IMPACT = "impact.json"


def run_training(
    cfg: TrainConfig,
    out: Path,
    *,
    resume: bool = False,
    progress: bool = True,
    rank: int = 0,
    world: int = 1,
    stop_after: int | None = None,
) -> Path:
    """Train ``cfg`` into ``out`` (the loop, with the phases its config asks for) and, once it
    finished, draw ``out/curves.png`` from ``out/metrics.jsonl``; returns ``out/final``. Recipe
    ``merge`` trains nothing: it writes the merged model
    (:func:`longred_bench.training.merge.merge_run`)."""
    if cfg.recipe == "merge":
        from longred_bench.training.merge import merge_run

        return merge_run(cfg, out, progress=progress and rank == 0)
    anchors, phases = None, pretrain_phases(cfg)
    if cfg.recipe == "longrecipe" and "measured" in cfg.anchors:
        impact = measure_anchors(cfg, out, progress=progress and rank == 0)
        anchors, phases = tuple(impact["anchors"]), (*phases, _ImpactInfo(impact))
    final = train(
        cfg, out, resume=resume, progress=progress, rank=rank, world=world,
        stop_after=stop_after, phases=phases, anchors=anchors,
    )  # fmt: skip
    if rank == 0 and (final / "config.json").is_file():
        plot_curves(out / METRICS, out / "curves.png", title=f"{cfg.recipe} ({cfg.profile})")
    return final


def train_command(cfg: TrainConfig, out: Path, *, resume: bool, progress: bool) -> Path | None:
    """``train``: one process, or one rank under ``torchrun``; returns ``out/final`` on rank 0."""
    from longred_bench.training.distributed import init_distributed

    rank, world = init_distributed()
    final = run_training(
        cfg, out, resume=resume, progress=progress and rank == 0, rank=rank, world=world
    )
    return final if rank == 0 else None


class _ImpactInfo:
    """Adds the anchor measurement to ``run.json``."""

    def __init__(self, impact: dict[str, Any]) -> None:
        self.impact = impact

    def before(self, run: Any, cfg: TrainConfig, out: Path, *, world: int, progress: bool) -> None:
        return None

    def info(self, run: Any, cfg: TrainConfig, out: Path) -> dict[str, Any]:
        return {"impact": self.impact}


def measure_anchors(cfg: TrainConfig, out: Path, *, progress: bool = True) -> dict[str, Any]:
    """LongRecipe's anchor types for ``cfg`` (module docstring): ``anchors``, ``lifts`` and
    ``shares`` per word type, and how they were measured; read from ``out/impact.json`` when
    there."""
    import torch

    from longred_bench.cache import atomic_write_text
    from longred_bench.models.loading import extended_config, load, load_config
    from longred_bench.training.checkpoint import latest_checkpoint
    from longred_bench.training.data import window_set
    from longred_bench.training.impactful_tokens import (
        logit_change,
        measured_anchors,
        type_lifts,
        type_shares,
    )

    path = out / IMPACT
    if path.is_file():
        return json.loads(path.read_text())
    target = int(extended_config(load_config(cfg.model), cfg.rope).max_position_embeddings)
    # About as many tokens a step as the run's long stage reads (its share of tokens_per_step),
    # in whole rows of the target window.
    rows = max(1, round(cfg.tokens_per_step * cfg.mix["long"] / target))
    brief = cfg.replace(
        recipe="cpt", steps=cfg.impact_steps, long_len=target, mix_long=1.0, mix_short=0.0,
        mix_s2l=0.0, anchors=(), keep_other=1.0, replay_steps=0, replay_lr=0.0,
        checkpoint_every=cfg.impact_steps, schedule="constant", warmup_steps=0,
        tokens_per_step=rows * target,
    )  # fmt: skip
    brief_dir = out / "impact"
    extended = train(brief, brief_dir, resume=latest_checkpoint(brief_dir) is not None,
                     progress=progress)  # fmt: skip
    brief_info = json.loads((brief_dir / "run.json").read_text())
    original = load(cfg.model)
    ids, _ = window_set(original.tokenizer, cfg.long_data, target, seed=cfg.seed)
    ids = ids[:IMPACT_WINDOWS]
    with torch.no_grad():
        change = logit_change(original.model.eval(), load(str(extended)).model.eval(), ids)
    lifts = type_lifts(change, ids, original.tokenizer)
    impact = {
        "anchors": list(measured_anchors(lifts)),
        "lifts": {k: round(v, 4) for k, v in lifts.items()},
        "shares": {k: round(v, 4) for k, v in type_shares(change, ids, original.tokenizer).items()},
        "brief_steps": cfg.impact_steps,
        "brief_len": target,
        "brief_tokens": brief_info["tokens"],
        "brief_seconds": brief_info["seconds"],
        "windows": len(ids),
    }
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(impact, indent=2))
    if progress:
        print(f"[longrecipe] measured anchors {impact['anchors']} (lifts {impact['lifts']})",
              flush=True)  # fmt: skip
    return impact
