"""``reproduce table1``: LongReD Table 1, drift of zero-shot extensions from the original model
and, at a profile where the suite trains (smoke, tiny), of Table 3's CPT checkpoints after
training and of the ``control`` checkpoint (the same data at the original RoPE), on the same texts.

Each drift measurement is cached by its config under ``$LONGRED_CACHE/runs/`` (the zero-shot
table as one unit, each trained checkpoint as its own under ``table1-after/``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from longred_bench.cache import cache_dir
from longred_bench.jobs.configs import DriftConfig
from longred_bench.jobs.drift import run_drift, save_run
from longred_bench.jobs.units import cached_records, save_records, stored_config
from longred_bench.reports.table1 import build_table1
from longred_bench.reproduce import DEFAULT_PROFILE
from longred_bench.reproduce.table3 import TABLE3_PROFILES, TrainedRow, train_cached
from longred_bench.results import (
    config_hash,
    read_cached_records,
    read_records,
    save_run_dir,
    write_table_records,
)

# Bumped when the drift measurement changes, so cached runs of older code are not reused
# (2: summaries carry per-text values).
DRIFT_VERSION = 2

_ABF_PI = ("pi:factor=4", "pi:factor=16")
TABLE1_PROFILES: dict[str, DriftConfig] = {
    "smoke": DriftConfig(
        original="tiny-random",
        rope=("abf:theta=1e5", "abf:theta=1e6", "abf:theta=1e7", *_ABF_PI),
        texts="random",
        num_texts=2,
        seq_len=64,
        top_m=2,
    ),
    "tiny": DriftConfig(
        original="tiny-base",
        rope=("abf:theta=4e5", "abf:theta=2e6", "abf:theta=1e7", "pi:factor=4"),
        texts="brown",
        num_texts=64,
        seq_len=256,
        top_m=1,
    ),
    "smol": DriftConfig(
        original="smollm2-135m",
        rope=("abf:theta=1e6", "abf:theta=1e7", "abf:theta=1e8", *_ABF_PI),
        texts="brown",
        num_texts=12,
        seq_len=512,
        top_m=6,
    ),
    "paper": DriftConfig(
        original="meta-llama/Meta-Llama-3-8B",
        rope=("abf:theta=2e7", "abf:theta=1e8", *_ABF_PI),
        texts="austen:all",
        num_texts=100,
        seq_len=8192,
        top_m=6,
        device="cuda",
        dtype="bfloat16",
    ),
}


def checkpoint_drift(
    profile: str,
    run: TrainedRow,
    drift: dict[str, Any],
    labels: dict[str, Any],
    *,
    force: bool = False,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Drift from the base model of the final checkpoint of Table 3's training ``run`` (trained,
    or reused from the run cache) with the settings ``drift`` (a :class:`DriftConfig` dict
    without ``extended``/``rope``): records carrying ``labels`` and the run's ``train`` info,
    cached under ``$LONGRED_CACHE/runs/table1-after/``."""
    final, info = train_cached(run.config(TABLE3_PROFILES[profile]), progress=progress)
    unit = {**drift, "extended": [str(final)], "rope": []}
    key = {**unit, "drift_version": DRIFT_VERSION}
    path = cache_dir() / "runs" / "table1-after" / config_hash(key) / "drift.jsonl"
    got = None if force else cached_records(path, key)
    if got is None:
        measured, _ = run_drift(DriftConfig.from_dict(unit), progress=progress)
        got = save_records(path, key, measured, unit["seed"], unit["device"])
    return [{**r, **labels, "train": info} for r in got]


def after_cpt_and_control_drift(
    profile: str,
    extensions: tuple[str, ...],
    drift: dict[str, Any],
    *,
    force: bool = False,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Table 1's trained rows: for each extension the drift of its ``cpt`` checkpoint
    (``stage="after"``), then that of the ``control`` checkpoint, CPT on the same data at the
    original RoPE (``stage="control"``, ``extension`` None), all seed 0 and on the same texts."""
    records: list[dict[str, Any]] = []
    for ext in extensions:
        labels = {"stage": "after", "trained_row": "cpt", "extension": ext}
        records += checkpoint_drift(
            profile, TrainedRow("cpt", ext, 0), drift, labels, force=force, progress=progress
        )
    if "control" in TABLE3_PROFILES[profile].rows:
        labels = {"stage": "control", "trained_row": "control", "extension": None}
        records += checkpoint_drift(
            profile, TrainedRow("control", None, 0), drift, labels, force=force, progress=progress
        )
    return records


def reproduce_table1(profile: str, out: Path, *, force: bool, progress: bool) -> list[Path]:
    cfg = TABLE1_PROFILES[profile]
    # stored_config ties the key to tiny-base's build where the original is tiny-base
    key = config_hash(stored_config({**cfg.to_dict(), "drift_version": DRIFT_VERSION}))
    run_dir = cache_dir() / "runs" / f"table1-{profile}-{key}"
    results = run_dir / "drift.jsonl"
    records = None if force else read_cached_records(results)
    if records is None:
        measured, provenance = run_drift(cfg, progress=progress)
        save_run_dir(run_dir, lambda tmp: save_run(tmp, measured, provenance))
        records = read_records(results)
    if profile in TABLE3_PROFILES:  # the suite trains there: drift after CPT and of the control
        drift = {k: v for k, v in cfg.to_dict().items() if k not in ("extended", "rope")}
        records += after_cpt_and_control_drift(
            profile, cfg.rope, drift, force=force, progress=progress
        )
    out.mkdir(parents=True, exist_ok=True)
    jsonl = write_table_records(out, "table1", records)
    command = (
        "nox -s reproduce_table1"
        if profile == DEFAULT_PROFILE
        else f"longred-bench reproduce table1 --profile {profile}"
    )
    md, png = build_table1(records, out, profile=profile, command=command)
    return [md, png, jsonl]
