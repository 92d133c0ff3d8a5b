"""``train``: a recipe's training run, then its loss curves (``curves.png``).

What a recipe does besides the loop is its method's to say (:mod:`longred_bench.training.methods`
hooks): the work before its first step (pretraining's copy warm-up, LongRecipe's anchor
measurement: :mod:`longred_bench.training.anchors`), or, for a recipe that trains nothing
(``merge``), the model it produces instead.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from longred_bench.reports.curves import plot_curves
from longred_bench.training.collectives import from_process_0
from longred_bench.training.config import TrainConfig
from longred_bench.training.loop import METRICS, check_run_dir, is_finished, train
from longred_bench.training.methods import METHODS


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
    """Train ``cfg`` into ``out`` (its method's preparation, then the loop) and, once it
    finished, draw ``out/curves.png`` from ``out/metrics.jsonl``; returns ``out/final``. A recipe
    that trains nothing (``merge``) writes its model instead, in process 0 alone (every process
    of a ``torchrun`` held both models and wrote the same folder); a finished one is kept as a
    finished run is (it was merged and written again on every call, ``--resume`` too). ``out``
    is checked first (:func:`~longred_bench.training.loop.check_run_dir`): a run of another
    config is refused before any preparation, and a finished run resumed is left as it is (its
    curves drawn where it stopped before them)."""
    method = METHODS[cfg.recipe]
    done = is_finished(out)
    if not method.TRAINS and done:  # another run's folder: a merge's own line
        from longred_bench.training.merge import check_out

        check_out(cfg, out)
    # before LongRecipe's preparation (it measures); a merge has its own checks until finished
    if (method.TRAINS or done) and check_run_dir(cfg, out, resume):
        drawn = ""
        missing = method.TRAINS and not (out / "curves.png").is_file()  # a merge draws none
        if rank == 0 and missing and (out / METRICS).is_file():
            # stopped after its final model was written, before its curves were drawn
            plot_curves(out / METRICS, out / "curves.png", title=f"{cfg.recipe} ({cfg.profile})")
            drawn = f"; its loss curves drawn: {out / 'curves.png'}"
        if progress and rank == 0:
            print(f"{out} holds this run finished ({out / 'final'}): nothing to resume{drawn}",
                  flush=True)  # fmt: skip
        return out / "final"
    if not method.TRAINS:  # process 0 writes it; the others wait for it
        return from_process_0(partial(method.produce, cfg, out, progress=progress), rank, world)
    prep = method.prepare(cfg, out, train=partial(train, rank=rank, world=world),
                          progress=progress and rank == 0, rank=rank, world=world)  # fmt: skip
    final = train(
        cfg, out, resume=resume, progress=progress, rank=rank, world=world,
        stop_after=stop_after, phases=prep.phases, anchors=prep.anchors,
    )  # fmt: skip
    if rank == 0 and (final / "config.json").is_file():
        plot_curves(out / METRICS, out / "curves.png", title=f"{cfg.recipe} ({cfg.profile})")
    return final


def train_command(cfg: TrainConfig, out: Path, *, resume: bool, progress: bool) -> Path | None:
    """``train``: one process, or one rank under ``torchrun`` (every rank leaves the process
    group together once rank 0 wrote the run); returns ``out/final`` on rank 0."""
    from longred_bench.training.distributed import init_distributed, leave_distributed

    rank, world = init_distributed()
    final = run_training(
        cfg, out, resume=resume, progress=progress and rank == 0, rank=rank, world=world
    )
    leave_distributed(world)
    return final if rank == 0 else None
