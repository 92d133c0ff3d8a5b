"""The run cache of jobs and tables: one unit of work (an evaluation, a drift measurement, ...)
saved under a directory with the config that made it, reused only when asked with that config.

A unit is a JSON-able config dict. :func:`save_records` writes its records (with provenance) and
``config.json`` beside them, swapping the directory in at once; :func:`cached_records` returns
them only when the stored config equals the one asked (a damaged entry counts as absent, with a
warning). :func:`run_eval_unit` evaluates one evaluation unit. ``compare``, ``reproduce table3``
and ``reproduce pcd`` all keep their units here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from longred_bench.cache import atomic_write_text
from longred_bench.evaluation.config import EvalConfig
from longred_bench.results import (
    Provenance,
    read_cached_json,
    read_cached_records,
    read_records,
    save_run_dir,
    write_records,
)


def _suite_builds(config: Any) -> set[str]:
    """Names of models the suite builds itself (``tiny-base``) anywhere among ``config``'s
    values."""
    from longred_bench.jobs.tiny_base import SUITE_BUILT

    if isinstance(config, str):
        return {config} & set(SUITE_BUILT)
    if isinstance(config, dict):
        config = list(config.values())
    if isinstance(config, list | tuple):
        return set().union(*(_suite_builds(x) for x in config)) if config else set()
    return set()


def stored_config(config: dict[str, Any]) -> dict[str, Any]:
    """The config a cached result is saved and matched under: a RULER evaluation or a PSA
    measurement also names the RULER sample generator's version, and a ``short_tiny`` evaluation
    the tiny tasks' version, so results measured on samples of an older generator are measured
    again rather than reused. A config that names a model the suite builds (``tiny-base``) and
    not already its build (``base``) also names the build, so a rebuilt model is measured again."""
    from longred_bench.jobs.tiny_base import build_identity

    builds = _suite_builds(config)
    if builds and "base" not in config:
        config = {**config, "suite_builds": {name: build_identity(name) for name in sorted(builds)}}
    if config.get("suite") == "ruler" or "psa" in config:
        from longred_bench.taskdata.ruler.store import GENERATOR_VERSION

        return {**config, "ruler_generator": GENERATOR_VERSION}
    if config.get("suite") == "short_tiny":
        from longred_bench.taskdata.tiny_tasks import TINY_TASKS_VERSION

        return {**config, "tiny_tasks": TINY_TASKS_VERSION}
    return config


def cached_records(path: Path, config: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The records saved at ``path`` if they were made by exactly ``config`` and are intact
    (a damaged cache is treated as absent, with a warning naming the file)."""
    if not path.is_file() or read_cached_json(path.parent / "config.json") != stored_config(config):
        return None
    return read_cached_records(path)


TIMING = "timing.json"
"""Beside a unit's records: ``{"seconds": ...}``, the wall time of the call that computed it."""


def save_records(
    path: Path,
    config: dict[str, Any],
    records: list[dict[str, Any]],
    seed: int,
    device: str,
    seconds: float | None = None,
) -> list[dict[str, Any]]:
    """Write ``records`` (with provenance) to ``path`` and ``config`` beside it, swapping the
    whole directory in at once (see :func:`longred_bench.results.save_run_dir`); read back.
    ``seconds``, where given, is kept in :data:`TIMING` (plans estimate from it)."""
    config = stored_config(config)
    provenance = Provenance.collect(config, seed=seed, device=device)

    def write(tmp: Path) -> None:
        write_records(tmp / path.name, records, provenance)
        atomic_write_text(tmp / "config.json", json.dumps(config, sort_keys=True, indent=1))
        if seconds is not None:
            atomic_write_text(tmp / TIMING, json.dumps({"seconds": round(seconds, 2)}))

    save_run_dir(path.parent, write)
    return read_records(path)


def run_eval_unit(
    unit: dict[str, Any], progress: bool, *, request_cache: Path | None = None
) -> list[dict[str, Any]]:
    """Evaluate one unit: an :class:`EvalConfig` as a dict, plus ``item_scores`` (per-document
    records) where set; ``base``, where present, only identifies the model in cache keys.
    ``request_cache``: keep each model response there as it is computed (``run_eval``)."""
    from longred_bench.evaluation.harness import run_eval

    cfg = EvalConfig.from_dict({k: v for k, v in unit.items() if k not in ("base", "item_scores")})
    item_scores = bool(unit.get("item_scores"))
    return run_eval(
        cfg, progress=progress, item_scores=item_scores, request_cache=request_cache
    ).records


def unit_seconds(run_dir: Path) -> float | None:
    """The wall seconds recorded beside a cached unit (:data:`TIMING`), or None."""
    try:
        value = json.loads((run_dir / TIMING).read_text())["seconds"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return float(value) if isinstance(value, (int, float)) else None
