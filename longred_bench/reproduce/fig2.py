"""``reproduce fig2``: LongReD Figure 2, short-text retention against hidden similarity over many
extended models.

A profile (:data:`FIG2_PROFILES`) names a model, the short evaluation, the drift settings (those of
a Table 1 profile: texts, count, length) and two lists of extensions (ABF bases, PI and YaRN
factors):

- ``zero_shot``: the model with each RoPE as it is (no training);
- ``trained``: the model after Table 3's long-only CPT at each RoPE (the ``cpt`` config of the
  Table 3 profile of the same name, seed 0; the runs Table 3 and Table 1 train are reused).

Each point is one extended model: its hidden similarity to the original (mean over layers and
texts) and its short score over the original's. Every training run, evaluation and drift
measurement is a cached unit, so an interrupted call resumes; the units of the two series run in
worker processes with ``--jobs``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from longred_bench.reproduce.pool import Unit, run_units_parallel


@dataclass(frozen=True)
class Fig2Profile:
    """What ``reproduce fig2`` runs at one scale (see the module)."""

    model: str
    drift: str  # the Table 1 (and, for ``trained``, Table 3) profile of the same settings
    short: dict[str, Any] = field(default_factory=dict)  # the short evaluation's settings
    zero_shot: tuple[str, ...] = ()
    trained: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for series in (self.zero_shot, self.trained):
            if series and len(series) < 3:
                raise ValueError("a Figure 2 series needs at least 3 extensions for a rank "
                                 "correlation")  # fmt: skip
            if len(set(series)) != len(series):
                raise ValueError(f"an extension is listed twice: {series}")


_ABF = ("abf:theta=4e5", "abf:theta=1e6", "abf:theta=2e6", "abf:theta=5e6", "abf:theta=1e7",
        "abf:theta=1e8")  # fmt: skip
_FACTORS = tuple(f"{m}:factor={f}" for m in ("pi", "yarn") for f in (2, 4, 8))
FIG2_PROFILES: dict[str, Fig2Profile] = {
    "smoke": Fig2Profile(
        model="tiny-random",
        drift="smoke",
        short={"suite": "short_tiny", "limit": 4, "max_length": 1024, "batch_size": 4},
        zero_shot=("abf:theta=1e5", "pi:factor=2", "yarn:factor=2"),
        trained=("abf:theta=1e5", "abf:theta=1e6", "pi:factor=2"),
    ),
    # 12 CPT-trained extensions of tiny-base (Table 3's ABF 2e6 and PI x2 and Table 1's ABF 4e5,
    # 1e7 and PI x4 among them), Short Avg as Table 3 scores it.
    "tiny": Fig2Profile(
        model="tiny-base",
        drift="tiny",
        short={"suite": "short_tiny", "limit": 200, "max_length": None, "batch_size": 16},
        trained=(*_ABF, *_FACTORS),
    ),
    # SmolLM2-135M as it is at 13 RoPE settings; four short tasks it scores above chance
    # (loglikelihood only: generation tasks take about 20 s per answer on this CPU).
    "smol": Fig2Profile(
        model="smollm2-135m",
        drift="smol",
        short={
            "suite": "short",
            "limit": 40,
            "batch_size": 8,
            "tasks": [
                "longred_hellaswag",
                "longred_arc_easy",
                "longred_piqa",
                "longred_lambada_openai",
            ],
        },
        zero_shot=(
            "abf:theta=1e6",
            "abf:theta=1e7",
            "abf:theta=1e8",
            "abf:theta=1e9",
            "abf:theta=1e10",
            "pi:factor=2",
            "pi:factor=4",
            "pi:factor=8",
            "pi:factor=16",
            "yarn:factor=2",
            "yarn:factor=4",
            "yarn:factor=8",
            "yarn:factor=16",
        ),
    ),
}


def short_unit(fp: Fig2Profile, model: str, rope: str | None) -> dict[str, Any]:
    """The short evaluation unit of ``model`` with ``rope`` (Table 3's key where it is Table
    3's evaluation, so its cached units are reused)."""
    from longred_bench.jobs.tiny_base import build_identity

    return {"model": model, "base": build_identity(model), "rope": rope, "device": "cpu",
            "seed": 0, "item_scores": True, **fp.short}  # fmt: skip


def _drift_settings(fp: Fig2Profile) -> dict[str, Any]:
    from longred_bench.reproduce.table1 import TABLE1_PROFILES

    cfg = TABLE1_PROFILES[fp.drift].to_dict()
    return {k: v for k, v in cfg.items() if k not in ("extended", "rope")}


def zero_shot_drift(fp: Fig2Profile, extension: str, *, progress: bool) -> list[dict[str, Any]]:
    """Drift of the model at ``extension`` from itself at its own RoPE (cached per extension
    under ``$LONGRED_CACHE/runs/fig2-drift/``)."""
    from longred_bench.cache import cache_dir
    from longred_bench.jobs.configs import DriftConfig
    from longred_bench.jobs.drift import run_drift
    from longred_bench.jobs.tiny_base import build_identity
    from longred_bench.jobs.units import cached_records, save_records
    from longred_bench.reproduce.table1 import DRIFT_VERSION
    from longred_bench.results import config_hash

    unit = {**_drift_settings(fp), "original": fp.model, "extended": [], "rope": [extension]}
    key = {**unit, "base": build_identity(fp.model), "drift_version": DRIFT_VERSION}
    path = cache_dir() / "runs" / "fig2-drift" / config_hash(key) / "drift.jsonl"
    got = cached_records(path, key)
    if got is None:
        measured, _ = run_drift(DriftConfig.from_dict(unit), progress=progress)
        got = save_records(path, key, measured, unit["seed"], unit["device"])
    return got


def point_records(
    fp: Fig2Profile, series: str, extension: str | None, *, progress: bool
) -> list[dict[str, Any]]:
    """One point's records (``series`` ``zero-shot`` or ``cpt``; ``extension`` None: the
    original model's short scores), each labelled with its series and extension."""
    from longred_bench.reproduce.table3 import evaluate_cached

    labels = {"row": "original" if extension is None else series, "extension": extension,
              "seed": 0, "series": series}  # fmt: skip
    if extension is None:
        return evaluate_cached(short_unit(fp, fp.model, None), labels, progress=progress)
    if series == "zero-shot":
        drift = zero_shot_drift(fp, extension, progress=progress)
        unit = short_unit(fp, fp.model, extension)
        train = None
    else:
        from longred_bench.reproduce.table1 import checkpoint_drift
        from longred_bench.reproduce.table3 import TABLE3_PROFILES, TrainedRow, train_cached

        run = TrainedRow("cpt", extension, 0)
        final, train = train_cached(run.config(TABLE3_PROFILES[fp.drift]), progress=progress)
        drift = checkpoint_drift(fp.drift, run, _drift_settings(fp), {}, progress=progress)
        unit = short_unit(fp, str(final), None)
    evals = evaluate_cached(unit, {**labels, "train": train}, progress=progress)
    return [*evals, *({**r, **labels, "train": train} for r in drift)]


def points(fp: Fig2Profile) -> list[tuple[str, str | None]]:
    """``(series, extension)`` of every point, the original's short scores first."""
    out: list[tuple[str, str | None]] = [("original", None)]
    out += [("zero-shot", ext) for ext in fp.zero_shot]
    return out + [("cpt", ext) for ext in fp.trained]


def _point_quietly(fp: Fig2Profile, series: str, extension: str | None) -> None:
    point_records(fp, series, extension, progress=False)


def run_fig2(
    fp: Fig2Profile, *, progress: bool = True, jobs: int = 1
) -> tuple[list[dict[str, Any]], float]:
    """Every record of the figure (cached units reused) and the wall seconds of this call."""
    start = time.perf_counter()
    if jobs != 1:
        units = [Unit(_point_quietly, (fp, series, ext), f"{series} {ext or ''}".strip(),
                      1.0 if series == "cpt" else 0.5)
                 for series, ext in points(fp)]  # fmt: skip
        run_units_parallel(units, jobs, name="fig2", progress=progress)
    records: list[dict[str, Any]] = []
    for series, ext in points(fp):
        records += point_records(fp, series, ext, progress=progress)
    return records, time.perf_counter() - start


def reproduce_fig2(
    profile: str, out: Path, *, force: bool, progress: bool, jobs: int = 1
) -> list[Path]:
    """Run (or reuse) the figure's units at ``profile``; write ``fig2.jsonl.gz`` and the report."""
    import os

    from longred_bench.reports.fig2_report import build_fig2
    from longred_bench.reproduce.output import write_outputs

    del force  # every unit is cached by its config; there is nothing else to redo
    load_start = os.getloadavg()[0]
    records, seconds = run_fig2(FIG2_PROFILES[profile], progress=progress, jobs=jobs)
    return write_outputs(
        "fig2",
        build_fig2,
        records,
        out,
        profile=profile,
        jobs=jobs,
        seconds=seconds,
        load_start=load_start,
    )
