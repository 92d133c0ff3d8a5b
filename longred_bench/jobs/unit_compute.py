"""Computing one unit of the run cache (:class:`longred_bench.jobs.units.CachedUnit`): an
evaluation through the lm-eval harness, a ``ppl``, drift or PSA measurement. What an evaluation
or a drift measurement computes is kept in the unit's work folder as it goes (model responses,
finished lengths, finished windows), so a call interrupted before resumes from it, and so is the
time that work took (:data:`SPENT`): a resumed unit's time is the whole unit's."""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from longred_bench.cache import atomic_write_text
from longred_bench.errors import UserError

IDENTITY_KEYS = ("base", "item_scores", "drift_version", "weights", "texts_files")
"""Keys of a unit's config that only identify it (a model's build, a measurement's version, a
local model's files, a local text file's), which its computation does not take."""


def own_config(config: dict[str, Any]) -> dict[str, Any]:
    """What a unit's computation takes: ``config`` without :data:`IDENTITY_KEYS`."""
    return {k: v for k, v in config.items() if k not in IDENTITY_KEYS}


SPENT = "seconds.json"
"""In a unit's work folder: ``{"seconds": ...}``, the compute time interrupted calls spent on
the work kept there."""


def spent_before(work: Path) -> float | None:
    """The seconds earlier calls spent on the work kept in ``work``: 0 where it keeps none, None
    where it keeps work but not its time (a call killed outright, or one of an older version)."""
    with contextlib.suppress(OSError):
        if not any(p.is_file() and p.name != SPENT for p in work.rglob("*")):
            return 0.0
    try:
        value = json.loads((work / SPENT).read_text())["seconds"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return float(value) if isinstance(value, (int, float)) and value >= 0 else None


def compute_timed(
    kind: str, config: dict[str, Any], progress: bool, work: Path
) -> tuple[list[dict[str, Any]], float | None]:
    """:func:`compute`, and the unit's compute seconds: this call's and those of the calls
    interrupted before whose work it resumes (None where their time is not known). An
    interrupted or failed call adds its time to :data:`SPENT` where it kept work."""
    before, start = spent_before(work), time.perf_counter()
    try:
        records = compute(kind, config, progress, work)
    except BaseException:  # Ctrl-C, SIGTERM's, a failure: the work kept took this time too
        if before is not None and work.is_dir():
            seconds = round(before + time.perf_counter() - start, 2)
            with contextlib.suppress(OSError):
                atomic_write_text(work / SPENT, json.dumps({"seconds": seconds}))
        raise
    return records, None if before is None else before + time.perf_counter() - start


def compute(kind: str, config: dict[str, Any], progress: bool, work: Path) -> list[dict[str, Any]]:
    """The unit's records; an evaluation's responses and a drift's finished windows are kept
    under ``work`` as they are computed, and a call interrupted before resumes from them."""
    own = own_config(config)
    if kind in ("eval", "ppl"):
        from longred_bench.jobs.saved_responses import REQUESTS, saved_responses

        if saved := saved_responses(work / REQUESTS):
            print(f"[run cache] resuming {work.parent.parent}: {saved} model response(s) an "
                  "interrupted call saved are reused", flush=True)  # fmt: skip
        if kind == "ppl":
            return run_ppl_unit(config, progress, done_dir=work / REQUESTS)
        return run_eval_unit(config, progress, request_cache=work / REQUESTS)
    if kind == "drift":
        from longred_bench.jobs.configs import DriftConfig
        from longred_bench.jobs.drift import PARTIAL, run_drift

        work.mkdir(parents=True, exist_ok=True)
        return run_drift(DriftConfig.from_dict(own), progress=progress,
                         partial=work / PARTIAL)[0]  # fmt: skip
    from longred_bench.jobs.configs import PsaConfig
    from longred_bench.jobs.psa import run_psa
    from longred_bench.pcd.config import PcdConfig

    psa = {k: tuple(v) if isinstance(v, list) else v for k, v in config["psa"].items()}
    pcd = PcdConfig.from_dict(config["pcd"]) if config.get("pcd") else None
    return run_psa(PsaConfig(**psa), progress=progress, pcd=pcd)[0]


def run_eval_unit(
    unit: dict[str, Any], progress: bool, *, request_cache: Path | None = None
) -> list[dict[str, Any]]:
    """Evaluate one lm-eval unit: an :class:`EvalConfig` as a dict, plus ``item_scores``
    (per-document records) where set; ``base``, where present, only identifies the model in
    cache keys. ``request_cache``: keep each model response there as it is computed. The model
    is resolved first (backend, decoding, window), then the harness runs."""
    from longred_bench.evaluation import paper_suite
    from longred_bench.evaluation.config import EvalConfig
    from longred_bench.evaluation.harness import run_harness
    from longred_bench.evaluation.lm import open_model

    cfg = EvalConfig.from_dict(own_config(unit))
    if cfg.suite == "ppl":
        raise UserError("a ppl unit is measured by run_ppl_unit, not the lm-eval harness")
    if cfg.suite == paper_suite.SUITE:  # code runs where the environment allows it (no key)
        cfg = replace(cfg, allow_code_eval=paper_suite.code_eval_allowed())
        paper_suite.prepare_run(cfg.tasks, cfg.allow_code_eval)
    return run_harness(cfg, open_model(cfg), progress=progress,
                       item_scores=bool(unit.get("item_scores")),
                       request_cache=request_cache).records  # fmt: skip


def run_ppl_unit(
    unit: dict[str, Any], progress: bool, *, done_dir: Path | None = None
) -> list[dict[str, Any]]:
    """Measure one ``ppl`` unit (perplexity by position; an :class:`EvalConfig` as a dict);
    ``done_dir`` keeps each finished length."""
    from longred_bench.evaluation.config import EvalConfig
    from longred_bench.evaluation.ppl import run_ppl_config

    cfg = EvalConfig.from_dict(own_config(unit))
    return run_ppl_config(cfg, progress=progress, done_dir=done_dir)
