"""``train``: a recipe's training run with its phases, then its loss curves (``curves.png``)."""

from __future__ import annotations

from pathlib import Path

from longred_bench.reports.curves import plot_curves
from longred_bench.training.config import TrainConfig
from longred_bench.training.loop import METRICS, train
from longred_bench.training.pretrain.induction import pretrain_phases


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
    final = train(
        cfg, out, resume=resume, progress=progress, rank=rank, world=world,
        stop_after=stop_after, phases=pretrain_phases(cfg),
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
