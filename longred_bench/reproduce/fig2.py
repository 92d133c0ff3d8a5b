"""``reproduce fig2``: LongReD Figure 2, short-text retention against hidden similarity over many
extended models.

A profile's ``tables.fig2`` names two lists of extensions (ABF bases, PI and YaRN factors):

- ``zero_shot``: the model with each RoPE as it is (no training);
- ``trained``: the model after Table 3's long-only CPT at each RoPE (Table 3's ``cpt`` config,
  seed 0; the runs Table 3 and Table 1 train are reused).

Each point is one extended model: its hidden similarity to the original (mean over layers and
texts, the profile's ``drift`` settings) and its short score over the original's (the profile's
short suite, or ``tables.fig2.evaluation``). Every training run, evaluation and drift
measurement is a cached unit.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from longred_bench.jobs.units import CachedUnit, unit_folder
from longred_bench.reproduce.spec import Context, Step, TableSpec, lazy, refuse
from longred_bench.reproduce.table1 import DRIFT_VERSION, drift_settings, trained_drift_steps


@dataclass(frozen=True)
class Fig2Settings:
    """``tables.fig2``: the zero-shot and the CPT-trained extensions (each series empty or at
    least 3 for a rank correlation), and evaluation keys over the profile's."""

    zero_shot: tuple[str, ...] = ()
    trained: tuple[str, ...] = ()
    evaluation: dict[str, Any] = field(default_factory=dict)


def _check(ctx: Context) -> None:
    s = ctx.settings
    if not s.zero_shot and not s.trained:
        raise refuse(ctx, "tables.fig2.zero_shot", "give zero_shot or trained extensions")
    for key in ("zero_shot", "trained"):
        series = getattr(s, key)
        if series and len(series) < 3:
            raise refuse(ctx, f"tables.fig2.{key}", "a series needs at least 3 extensions for a "
                         "rank correlation")  # fmt: skip
        if len(set(series)) != len(series):
            raise refuse(ctx, f"tables.fig2.{key}", "an extension is listed twice")


def _short_step(ctx: Context, model: str, rope: str | None, labels: dict, **extra: Any) -> Step:
    from longred_bench.reproduce.grid import eval_unit, eval_units, table_evaluation
    from longred_bench.reproduce.table3 import table3_grid

    grid = replace(
        table3_grid(ctx.profile, "fig2"),
        evaluation=table_evaluation(ctx.profile, ctx.settings.evaluation, "fig2"),
    )
    unit = eval_units(grid, model, rope, None)[0]  # the short suite, keyed as Table 3 keys it
    label = f"eval {labels['series']} {labels['extension'] or ''} {unit['suite']}"
    return Step(eval_unit(unit), " ".join(label.split()), 0.4, labels=labels, **extra)


def zero_shot_drift_unit(ctx: Context, extension: str) -> CachedUnit:
    """Drift of the model at ``extension`` from itself at its own RoPE."""
    from longred_bench.jobs.tiny_base import build_identity

    model = ctx.profile.model.name
    config = {**drift_settings(ctx.profile), "original": model, "extended": [],
              "rope": [extension], "base": build_identity(model),
              "drift_version": DRIFT_VERSION}  # fmt: skip
    return CachedUnit("drift", unit_folder("fig2-drift", config), config)


def _steps(ctx: Context) -> list[Step]:
    from longred_bench.jobs.units import train_unit
    from longred_bench.reproduce.grid import TrainedRow
    from longred_bench.reproduce.table3 import table3_grid

    model = ctx.profile.model.name
    labels = {"row": "original", "extension": None, "seed": 0, "series": "original"}
    steps = [_short_step(ctx, model, None, labels)]
    for ext in ctx.settings.zero_shot:
        labels = {"row": "zero-shot", "extension": ext, "seed": 0, "series": "zero-shot",
                  "train": None}  # fmt: skip
        steps.append(_short_step(ctx, model, ext, labels))
        steps.append(Step(zero_shot_drift_unit(ctx, ext), f"drift zero-shot {ext}", 0.4,
                          labels=labels))  # fmt: skip
    for ext in ctx.settings.trained:
        run = TrainedRow("cpt", ext, 0)
        train = train_unit(run.config(table3_grid(ctx.profile, "fig2")))
        labels = {"row": "cpt", "extension": ext, "seed": 0, "series": "cpt"}
        train_step, drift = trained_drift_steps(ctx.profile, run, labels, f"drift cpt {ext}")
        short = _short_step(ctx, str(train.dir / "final"), None, labels, after=(train.folder,),
                            train=train.folder)  # fmt: skip
        steps += [train_step, short, drift]
    return steps


SPEC = TableSpec(
    "fig2", "LongReD Figure 2: short retention against hidden similarity", Fig2Settings, _steps,
    build=lazy("longred_bench.reports.fig2_report:build_fig2"), check=_check,
)  # fmt: skip
