"""``reproduce fig3``: LongReD Figure 3, short-text score against training step.

For every extension and seed of a profile (:data:`FIG3_PROFILES`), one long-only CPT run is
trained for ``multiple`` times Table 3's steps at its constant learning rate and keeps its model
at log-spaced optimizer steps (the config's ``snapshot_steps``); each kept model is scored on the
short suite. Step 0 is the zero-shot extension (the base model with the new RoPE) and the
original model's score is the reference line. Everything else (model, extensions, long data,
learning rate, tokens per step, evaluation settings) is Table 3's profile, so the zero-shot and
original evaluations come from Table 3's cache, and with a constant learning rate the snapshot at
Table 3's steps is the model Table 3's CPT run of the same seed would be. Each run is cached and
resumable like any training run; each evaluation is a cached unit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from longred_bench.errors import UserError
from longred_bench.reproduce.pool import Unit, run_units_parallel
from longred_bench.reproduce.table3 import (
    TABLE3_PROFILES,
    Table3Profile,
    TrainedRow,
    _eval_units,
    evaluate_cached,
    run_dir_of,
    train_cached,
)


@dataclass(frozen=True)
class Fig3Profile:
    """What ``reproduce fig3`` runs at one scale: Table 3's ``table`` profile (its
    extensions and evaluation settings), each CPT run ``multiple`` x its steps long with
    ``seeds`` seeds, scored at the optimizer steps ``snapshots`` (the last one is the run's end)."""

    table: Table3Profile
    snapshots: tuple[int, ...]
    multiple: int = 4
    seeds: int = 3

    def __post_init__(self) -> None:
        if self.multiple < 1 or self.seeds < 1:
            raise ValueError("fig3 needs multiple >= 1 and seeds >= 1")
        if list(self.snapshots) != sorted(set(self.snapshots)) or self.snapshots[0] < 1:
            raise ValueError(f"fig3 snapshots must be increasing steps >= 1: {self.snapshots}")

    def run_config(self, extension: str, seed: int) -> Any:
        """The training config of the curve run of ``extension`` and ``seed``."""
        cfg = TrainedRow("cpt", extension, seed).config(self.table)
        steps = cfg.steps * self.multiple
        if self.snapshots[-1] != steps:
            raise UserError(
                f"fig3's last snapshot ({self.snapshots[-1]}) must be the run's end: {steps} "
                f"steps ({self.multiple} x Table 3's {cfg.steps})"
            )
        if cfg.schedule != "constant":
            raise UserError(
                f"fig3 needs a constant learning rate (the run is longer than Table 3's; a "
                f"{cfg.schedule} schedule would change every step): set schedule=constant"
            )
        return cfg.replace(steps=steps, snapshot_steps=list(self.snapshots))


FIG3_PROFILES: dict[str, Fig3Profile] = {
    "smoke": Fig3Profile(
        replace(TABLE3_PROFILES["smoke"], rows=("cpt",)),
        snapshots=(1, 2, 4),
        multiple=2,
        seeds=1,
    ),
    # Table 3's 64 steps: kept at 4, 16, 64 (Table 3's end) and 256, 3 seeds at ABF 2e6 and PI x2.
    "tiny": Fig3Profile(
        replace(TABLE3_PROFILES["tiny"], rows=("cpt",), seeds={"cpt": 3}, table1_extensions=()),
        snapshots=(4, 16, 64, 256),
    ),
}


def short_unit(prof: Table3Profile, model: str, rope: str | None, ext: str | None) -> dict:
    """Table 3's short-suite evaluation unit of ``model`` (with ``rope``) in ``ext``'s rows."""
    return next(u for u in _eval_units(prof, model, rope, ext) if u["suite"] == prof.short_suite)


def base_units(fp: Fig3Profile) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``(unit, labels)`` of the original model and of each zero-shot extension (step 0)."""
    prof = fp.table
    units = [
        (
            short_unit(prof, prof.model, None, None),
            {"row": "original", "extension": None, "seed": 0, "step": None, "train": None},
        )
    ]
    for ext in prof.extensions:
        units.append((short_unit(prof, prof.model, ext, ext),
                      {"row": "zero-shot", "extension": ext, "seed": 0, "step": 0,
                       "train": None}))  # fmt: skip
    return units


def curve_records(
    fp: Fig3Profile, extension: str, seed: int, *, progress: bool
) -> list[dict[str, Any]]:
    """Train (or reuse) the curve run of ``extension`` and ``seed``, score (or reuse) each of
    its snapshots; their records, labelled with the step."""
    from longred_bench.training.loop import snapshot_dir

    cfg = fp.run_config(extension, seed)
    _, info = train_cached(cfg, progress=progress)
    run_dir = run_dir_of(cfg)
    records = []
    for step in fp.snapshots:
        model = snapshot_dir(run_dir, step)
        if not (model / "config.json").is_file():
            raise UserError(f"{run_dir} has no model of step {step}: delete it and run again")
        train = {**info, "snapshot": step, "table_steps": cfg.steps // fp.multiple}
        labels = {"row": "cpt", "extension": extension, "seed": seed, "step": step, "train": train}
        unit = short_unit(fp.table, str(model), None, extension)
        records += evaluate_cached(unit, labels, progress=progress)
    return records


def _base_quietly(unit: dict[str, Any], labels: dict[str, Any]) -> None:
    evaluate_cached(unit, labels, progress=False)


def _curve_quietly(fp: Fig3Profile, extension: str, seed: int) -> None:
    curve_records(fp, extension, seed, progress=False)


def fig3_units(fp: Fig3Profile) -> list[Unit]:
    """The independent units: the base evaluations and each curve run with its evaluations
    (cost: the run's length in Table 3 runs plus its evaluations)."""
    units = [Unit(_base_quietly, (unit, labels),
                  f"eval {labels['row']} {labels['extension'] or ''}".strip(), 0.4)
             for unit, labels in base_units(fp)]  # fmt: skip
    for seed in range(fp.seeds):
        for ext in fp.table.extensions:
            cost = fp.multiple + 0.4 * len(fp.snapshots)
            units.append(Unit(_curve_quietly, (fp, ext, seed), f"curve cpt {ext} seed {seed}",
                              cost))  # fmt: skip
    return units


def run_fig3(
    fp: Fig3Profile, *, progress: bool = True, jobs: int = 1
) -> tuple[list[dict[str, Any]], float]:
    """Every record of the figure (cached units reused) and the wall seconds of this call."""
    start = time.perf_counter()
    if jobs != 1:
        run_units_parallel(fig3_units(fp), jobs, name="fig3", progress=progress)
    records: list[dict[str, Any]] = []
    for unit, labels in base_units(fp):
        records += evaluate_cached(unit, labels, progress=progress)
    for seed in range(fp.seeds):
        for ext in fp.table.extensions:
            records += curve_records(fp, ext, seed, progress=progress)
    return records, time.perf_counter() - start


def cached_runs(fp: Fig3Profile) -> tuple[int, int]:
    """(finished curve runs in the run cache, curve runs of the profile), for ``--dry-run``."""
    from longred_bench.training.loop import snapshot_dir

    runs = [run_dir_of(fp.run_config(ext, seed))
            for seed in range(fp.seeds) for ext in fp.table.extensions]  # fmt: skip
    done = sum((snapshot_dir(r, fp.snapshots[-1]) / "config.json").is_file() for r in runs)
    return done, len(runs)


def reproduce_fig3(
    profile: str, out: Path, *, force: bool, progress: bool, jobs: int = 1
) -> list[Path]:
    """Run (or reuse) the figure's units at ``profile``; write ``fig3.jsonl.gz`` and the report."""
    import os

    from longred_bench.reports.fig3_report import build_fig3
    from longred_bench.reproduce.output import write_outputs

    del force  # every unit is cached by its config; there is nothing else to redo
    load_start = os.getloadavg()[0]
    records, seconds = run_fig3(FIG3_PROFILES[profile], progress=progress, jobs=jobs)
    return write_outputs(
        "fig3",
        build_fig3,
        records,
        out,
        profile=profile,
        jobs=jobs,
        seconds=seconds,
        load_start=load_start,
    )
