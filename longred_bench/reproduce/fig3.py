"""``reproduce fig3``: LongReD Figure 3, short-text score against training step.

For every extension and seed of the profile, one long-only CPT run is trained for ``multiple``
times Table 3's steps at its constant learning rate and keeps its model at the optimizer steps
``snapshots`` (the config's ``snapshot_steps``); each kept model is scored on the short suite.
Step 0 is the zero-shot extension (the base model with the new RoPE) and the original model's
score is the reference line. Everything else (model, extensions, long data, learning rate, tokens
per step, evaluation) is Table 3's grid, so the zero-shot and original evaluations come from
Table 3's cache, and with a constant learning rate the snapshot at Table 3's steps is the model
Table 3's CPT run of the same seed would be.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from longred_bench.errors import UserError
from longred_bench.reproduce.grid import GridSettings, RunGrid
from longred_bench.reproduce.spec import Context, Step, TableSpec, lazy, refuse


@dataclass(frozen=True)
class Fig3Settings(GridSettings):
    """``tables.fig3``: the optimizer steps kept (increasing, the last one the run's end),
    how many times Table 3's steps each run trains, and its seeds (a number); the grid's other
    keys as any training table's."""

    snapshots: tuple[int, ...] = ()
    multiple: int = 4


def _check(ctx: Context) -> None:
    s = ctx.settings
    if not s.snapshots:
        raise refuse(ctx, "tables.fig3.snapshots", "give the optimizer steps to keep")
    if list(s.snapshots) != sorted(set(s.snapshots)) or s.snapshots[0] < 1:
        raise refuse(ctx, "tables.fig3.snapshots", f"must be increasing steps >= 1, got "
                     f"{list(s.snapshots)}")  # fmt: skip
    if s.multiple < 1 or isinstance(s.seeds, dict) or (s.seeds is not None and s.seeds < 1):
        raise refuse(ctx, "tables.fig3", "multiple and seeds must be numbers >= 1")


def grid(ctx: Context) -> RunGrid:
    """Table 3's grid with one row, ``cpt``, and the figure's seeds."""
    from longred_bench.reproduce.grid import make_grid

    return make_grid(ctx, ("cpt",), ("cpt",))


def run_config(ctx: Context, g: RunGrid, extension: str, seed: int) -> Any:
    """The training config of the curve run of ``extension`` and ``seed``."""
    from longred_bench.reproduce.grid import TrainedRow

    s = ctx.settings
    cfg = TrainedRow("cpt", extension, seed).config(g)
    steps = cfg.steps * s.multiple
    if s.snapshots[-1] != steps:
        raise UserError(
            f"fig3's last snapshot ({s.snapshots[-1]}) must be the run's end: {steps} steps "
            f"({s.multiple} x Table 3's {cfg.steps}); set tables.fig3.snapshots"
        )
    if cfg.schedule != "constant":
        raise UserError(
            f"fig3 needs a constant learning rate (the run is longer than Table 3's; a "
            f"{cfg.schedule} schedule would change every step): set schedule=constant"
        )
    return cfg.replace(steps=steps, snapshot_steps=list(s.snapshots))


def _short(g: RunGrid, model: str, rope: str | None, ext: str | None) -> dict[str, Any]:
    from longred_bench.reproduce.grid import eval_units

    suite = g.evaluation.short.suite
    return next(u for u in eval_units(g, model, rope, ext) if u["suite"] == suite)


def _steps(ctx: Context) -> list[Step]:
    from longred_bench.jobs.units import train_unit
    from longred_bench.reproduce.grid import eval_unit
    from longred_bench.training.layout import snapshot_dir

    g = grid(ctx)
    steps = [Step(eval_unit(_short(g, g.model, None, None)), "eval original", 0.4,
                  labels={"row": "original", "extension": None, "seed": 0, "step": None,
                          "train": None})]  # fmt: skip
    for ext in g.extensions:
        labels = {"row": "zero-shot", "extension": ext, "seed": 0, "step": 0, "train": None}
        steps.append(Step(eval_unit(_short(g, g.model, ext, ext)), f"eval zero-shot {ext}", 0.4,
                          labels=labels))  # fmt: skip
    for seed in range(g.seed_count("cpt")):
        for ext in g.extensions:
            cfg = run_config(ctx, g, ext, seed)
            train = train_unit(cfg)
            steps.append(Step(train, f"curve cpt {ext} seed {seed}", ctx.settings.multiple))
            for step in ctx.settings.snapshots:
                model = str(snapshot_dir(train.dir, step))
                labels = {"row": "cpt", "extension": ext, "seed": seed, "step": step}
                extra = {"snapshot": step, "table_steps": cfg.steps // ctx.settings.multiple}
                steps.append(Step(
                    eval_unit(_short(g, model, None, ext)), f"eval cpt {ext} seed {seed} step "
                    f"{step}", 0.4, after=(train.folder,), labels=labels, train=train.folder,
                    train_extra=extra,
                ))  # fmt: skip
    return steps


SPEC = TableSpec(
    "fig3", "LongReD Figure 3: short-text score against training step", Fig3Settings, _steps,
    build=lazy("longred_bench.reports.fig3_report:build_fig3"), check=_check,
)  # fmt: skip
