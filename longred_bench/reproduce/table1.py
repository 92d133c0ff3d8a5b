"""``reproduce table1``: LongReD Table 1, drift of zero-shot extensions from the original model
and, where the profile says ``after_cpt``, of the CPT checkpoints at those extensions (Table 3's
``cpt`` config, every seed of the profile's ``runs.seeds``) and of the ``control`` checkpoints
(the same data at the original RoPE, every seed), on the same texts.

The zero-shot table is one cached unit (``runs/table1/<hash>``, keyed by what it measures, not
by the profile's name: a copy of a profile reuses it); each trained checkpoint's drift is its
own (``runs/table1-after/<hash>``), beside the training runs Table 3 and Figure 2 share.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longred_bench.jobs.units import CachedUnit, train_unit, unit_folder
from longred_bench.profiles.loader import DEFAULT
from longred_bench.profiles.schema import Profile
from longred_bench.reproduce.spec import Context, Step, TableSpec, refuse

# Bumped when the drift measurement changes, so cached runs of older code are not reused
# (2: summaries carry per-text values).
DRIFT_VERSION = 2


@dataclass(frozen=True)
class Table1Settings:
    """``tables.table1``: the RoPE extensions measured zero-shot (default: the profile's
    ``runs.extensions``) and whether each is also trained with CPT, then measured with the
    control checkpoint."""

    extensions: tuple[str, ...] | None = None
    after_cpt: bool = False


def drift_settings(profile: Profile) -> dict[str, Any]:
    """The drift measurement's settings at ``profile`` (a :class:`DriftConfig` dict without the
    models and RoPE)."""
    from longred_bench.jobs.configs import DriftConfig

    d = profile.drift
    cfg = DriftConfig(original=profile.model.name, texts=d.texts, num_texts=d.num_texts,
                      seq_len=d.seq_len, top_m=d.top_m, device=d.device, dtype=d.dtype)  # fmt: skip
    return {k: v for k, v in cfg.to_dict().items() if k not in ("extended", "rope")}


def zero_shot_unit(profile: Profile, extensions: tuple[str, ...]) -> CachedUnit:
    """The drift of the profile's model at every extension, one unit."""
    from longred_bench.jobs.local_files import local_stamps
    from longred_bench.jobs.units import stored_config
    from longred_bench.results import config_hash

    config = {**drift_settings(profile), "extended": [], "rope": list(extensions),
              "drift_version": DRIFT_VERSION}  # fmt: skip
    key = config_hash(stored_config({**config, **local_stamps(config)}))  # a local model's files
    return CachedUnit("drift", f"runs/table1/{key}", config)


def checkpoint_drift_unit(profile: Profile, final: Path) -> CachedUnit:
    """The drift from the profile's model of the trained checkpoint ``final``."""
    config = {**drift_settings(profile), "extended": [str(final)], "rope": [],
              "drift_version": DRIFT_VERSION}  # fmt: skip
    return CachedUnit("drift", unit_folder("table1-after", config), config)


def trained_drift_steps(
    profile: Profile, run: Any, labels: dict[str, Any], label: str
) -> list[Step]:
    """A training run of Table 3's grid at ``profile`` (a
    :class:`~longred_bench.reproduce.grid.TrainedRow`) and the drift of its checkpoint, its
    records labelled ``labels`` and its summary."""
    from longred_bench.reproduce.table3 import table3_grid

    train = train_unit(run.config(table3_grid(profile, "table1")))
    drift = checkpoint_drift_unit(profile, train.dir / "final")
    where = run.extension or "original RoPE"
    return [
        Step(train, f"train {run.row} {where} seed {run.seed}"),
        Step(drift, label, 0.4, after=(train.folder,), labels=labels, train=train.folder),
    ]


def extensions(ctx: Context) -> tuple[str, ...]:
    own = ctx.settings.extensions  # an empty list is the table's own (refused by _check)
    return ctx.profile.runs.extensions if own is None else own


def _steps(ctx: Context) -> list[Step]:
    from longred_bench.reproduce.grid import TrainedRow
    from longred_bench.reproduce.table3 import table3_grid

    exts = extensions(ctx)
    steps = [Step(zero_shot_unit(ctx.profile, exts), "drift zero-shot", 0.4, labels={})]
    if not ctx.settings.after_cpt:
        return steps
    seeds = range(ctx.profile.runs.seeds)
    for ext in exts:
        for seed in seeds:
            labels = {"stage": "after", "trained_row": "cpt", "extension": ext, "seed": seed}
            steps += trained_drift_steps(ctx.profile, TrainedRow("cpt", ext, seed), labels,
                                         f"drift after cpt {ext} seed {seed}")  # fmt: skip
    if "control" in table3_grid(ctx.profile, "table1").rows:
        for seed in seeds:
            labels = {"stage": "control", "trained_row": "control", "extension": None, "seed": seed}
            steps += trained_drift_steps(ctx.profile, TrainedRow("control", None, seed), labels,
                                         f"drift control seed {seed}")  # fmt: skip
    return steps


def _check(ctx: Context) -> None:
    if not extensions(ctx):
        raise refuse(ctx, "tables.table1.extensions", "name at least one RoPE extension")


CALLED_AS = "LONGRED_CALLED_AS"
"""The variable ``nox -s reproduce_table1`` sets to :data:`MAIN_JOB`, so the report it writes
names the README's command (the same call typed by hand is named as typed)."""
MAIN_JOB = "nox -s reproduce_table1"


def _build(records: list[dict[str, Any]], out: Path, *, profile: str, command: str,
           wall_note: str = "", **_: Any) -> list[Path]:  # fmt: skip
    """Table 1's report; the README's main job is named as such where it ran it (its nox session
    sets :data:`CALLED_AS`), and a rebuild says so (a run's own wall time is not part of this
    report)."""
    import os

    from longred_bench.reports.table1 import build_table1

    rebuilt = "--rebuild" in command.split()
    called = os.environ.get(CALLED_AS, "")
    if command == f"longred-bench reproduce table1 --profile {DEFAULT}" and called == MAIN_JOB:
        command = MAIN_JOB  # the README's main job
    return list(build_table1(records, out, profile=profile, command=command,
                             note=wall_note if rebuilt else ""))  # fmt: skip


SPEC = TableSpec(
    "table1", "LongReD Table 1: drift of extended models from the original", Table1Settings,
    _steps, build=_build, check=_check, parallel=True, default_profile=DEFAULT,
)  # fmt: skip
