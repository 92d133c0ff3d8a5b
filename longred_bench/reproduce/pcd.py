"""The runs of ``reproduce pcd``: RULER by length, the short tasks and PSA curves of a model and
its zero-shot extensions, each with greedy decoding and with PCD, plus a sweep of the contrast
strength on one task.

A profile (:data:`PCD_PROFILES`) declares the model, the extensions (``none`` is the model as
it is), the RULER tasks, lengths and samples, the short tasks, the PSA tasks and samples, the
sweep and PCD's parameters. Every unit (one evaluation, or one PSA measurement) is saved under
``$LONGRED_CACHE/runs/pcd-<profile>-<hash>/`` beside the config that made it and reused when asked
again, so an interrupted run resumes. Evaluations keep per-document scores (``eval_item``
records) for the paired verdicts of :mod:`longred_bench.reports.pcd_report`.

Every record gets ``line`` (``original`` or the RoPE spec), ``decoding`` (``greedy`` or
``pcd``) and ``part`` (``ruler``, ``short``, ``sweep`` or ``psa``); sweep records carry
``alpha``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

from longred_bench.cache import cache_dir
from longred_bench.errors import UserError
from longred_bench.jobs.configs import ORIGINAL, PsaConfig
from longred_bench.jobs.psa import run_psa
from longred_bench.jobs.units import cached_records, run_eval_unit, save_records
from longred_bench.pcd.config import PcdConfig
from longred_bench.results import config_hash

PCD_RUN_VERSION = 1  # bumped when a unit's measurement changes, so old caches are not reused


@dataclass(frozen=True)
class PcdProfile:
    """What ``reproduce pcd`` runs at one profile (see the module docstring)."""

    model: str
    ropes: tuple[str, ...]
    ruler_tasks: tuple[str, ...]
    lengths: tuple[int, ...]
    ruler_samples: int
    short_tasks: tuple[str, ...]
    short_limit: int
    psa_tasks: tuple[str, ...]
    psa_samples: int
    sweep_task: str
    sweep_rope: str
    sweep_length: int
    sweep_alphas: tuple[float, ...]
    pcd: PcdConfig = field(default_factory=PcdConfig)
    batch_size: int = 1
    # Trained checkpoints of Table 3 at the same profile, as (row, extension): each is one more
    # line, evaluated as saved (its own extended RoPE), with the original's window for short tasks.
    trained: tuple[tuple[str, str], ...] = ()


SMOL_SHORT_TASKS = (
    "longred_mmlu", "longred_hellaswag", "longred_piqa", "longred_winogrande",
    "longred_arc_easy", "longred_arc_challenge", "longred_boolq",
)  # fmt: skip
PCD_PROFILES: dict[str, PcdProfile] = {
    "tiny": PcdProfile(
        model="tiny-base",
        ropes=(ORIGINAL, "abf:theta=4e5", "pi:factor=4"),
        ruler_tasks=("niah_single_1", "niah_single_2", "niah_multikey_1", "vt"),
        lengths=(256, 512, 1024),
        ruler_samples=20,
        short_tasks=("longred_tiny_passkey", "longred_tiny_nextsent", "longred_tiny_cloze"),
        short_limit=100,
        psa_tasks=("niah_single_1", "niah_single_2"),
        psa_samples=20,
        sweep_task="niah_single_1",
        sweep_rope="abf:theta=4e5",
        sweep_length=512,
        sweep_alphas=(0.5, 1.0, 3.0),
        batch_size=8,
        trained=(("cpt", "abf:theta=4e5"), ("longred-c", "abf:theta=4e5")),
    ),
    "smoke": PcdProfile(
        model="tiny-random",
        ropes=(ORIGINAL, "pi:factor=4"),
        ruler_tasks=("niah_single_1", "vt"),
        lengths=(512, 1024),
        ruler_samples=2,
        short_tasks=("longred_tiny_nextsent",),
        short_limit=4,
        psa_tasks=("niah_single_1",),
        psa_samples=2,
        sweep_task="vt",
        sweep_rope=ORIGINAL,
        sweep_length=512,
        sweep_alphas=(0.0, 0.5, 3.0),
    ),
    "smol": PcdProfile(
        model="smollm2-135m",
        ropes=(ORIGINAL, "abf:theta=1e7", "yarn:factor=4"),
        ruler_tasks=("niah_single_2", "niah_multikey_1", "vt"),
        lengths=(1024, 2048),
        ruler_samples=8,
        short_tasks=SMOL_SHORT_TASKS,
        short_limit=20,
        psa_tasks=("niah_single_2", "niah_multikey_3"),
        psa_samples=8,
        sweep_task="niah_single_2",
        sweep_rope="abf:theta=1e7",
        sweep_length=2048,
        sweep_alphas=(0.5, 1.0, 3.0),
        batch_size=4,
    ),
}


def line_of(rope: str) -> str:
    """The report's name of an extension: ``original`` for the model as it is."""
    return "original" if rope == ORIGINAL else rope


def trained_line(row: str, extension: str) -> str:
    """The report's name of a trained checkpoint's line, e.g. ``longred-c abf:theta=4e5``."""
    return f"{row} {extension}"


def _trained_models(profile: str, prof: PcdProfile, progress: bool) -> list[tuple[str, str]]:
    """``(line, model directory)`` of each trained checkpoint of the profile, trained (or reused
    from Table 3's run cache) on demand."""
    from longred_bench.reproduce.table3 import TABLE3_PROFILES, TrainedRow, train_cached

    if prof.trained and profile not in TABLE3_PROFILES:
        raise UserError(f"pcd profile {profile!r} names trained rows; Table 3 has no such profile")
    out = []
    for row, ext in prof.trained:
        final, _ = train_cached(TrainedRow(row, ext, 0).config(TABLE3_PROFILES[profile]),
                                progress=progress)  # fmt: skip
        out.append((trained_line(row, ext), str(final)))
    return out


def _eval_unit(
    prof: PcdProfile,
    rope: str,
    part: str,
    decoding: str,
    alpha: float | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    """The :func:`longred_bench.jobs.units.run_eval_unit` config of one evaluation (of ``model``,
    default the profile's)."""
    from longred_bench.models.loading import load_config

    unit: dict[str, Any] = {
        "model": model or prof.model,
        "rope": None if rope == ORIGINAL else rope,
        "batch_size": prof.batch_size,
        "device": "cpu",
        "seed": 0,
        "item_scores": True,
    }
    if part == "short":
        # Every line gets the original's window, so greedy and PCD, and every extension, score
        # the same documents.
        unit.update(
            suite="short", tasks=[*prof.short_tasks], limit=prof.short_limit,
            max_length=int(load_config(prof.model).max_position_embeddings),
        )  # fmt: skip
    else:
        tasks = [prof.sweep_task] if part == "sweep" else prof.ruler_tasks
        lengths = [prof.sweep_length] if part == "sweep" else [*prof.lengths]
        unit.update(
            suite="ruler", tasks=[f"longred_ruler_{t}" for t in tasks], lengths=lengths,
            samples=prof.ruler_samples,
        )  # fmt: skip
    if decoding == "pcd":
        pcd = prof.pcd if alpha is None else replace(prof.pcd, alpha=alpha)
        unit.update(decoding="pcd", pcd=pcd.as_dict())
    return unit


def _cached(
    profile: str, unit: dict[str, Any], name: str, compute: Any, force: bool
) -> list[dict[str, Any]]:
    """The records of ``unit`` from the cache (unless ``force``), or ``compute()``'s, saved
    there first."""
    key = config_hash({**unit, "pcd_run_version": PCD_RUN_VERSION})
    path = cache_dir() / "runs" / f"pcd-{profile}-{key}" / name
    got = None if force else cached_records(path, unit)
    if got is None:
        got = save_records(path, unit, compute(), seed=0, device="cpu")
    return got


def _tag(records: list[dict[str, Any]], **tags: Any) -> list[dict[str, Any]]:
    return [{**r, **tags} for r in records]


def run_pcd(
    profile: str, *, progress: bool = True, force: bool = False
) -> tuple[list[dict[str, Any]], float]:
    """Run (or reuse, unless ``force``) every unit of ``profile``; all records, tagged, and the
    wall seconds."""
    if profile not in PCD_PROFILES:
        raise UserError(f"pcd has no profile {profile!r}; available: {', '.join(PCD_PROFILES)}")
    prof = PCD_PROFILES[profile]
    start = time.perf_counter()
    records: list[dict[str, Any]] = []
    trained = _trained_models(profile, prof, progress)
    targets = [(line_of(rope), None, rope) for rope in prof.ropes]
    targets += [(line, model, ORIGINAL) for line, model in trained]
    jobs = [(target, part, dec) for part in ("ruler", "short") for target in targets
            for dec in ("greedy", "pcd")]  # fmt: skip
    for (line, model, rope), part, decoding in jobs:
        unit = _eval_unit(prof, rope, part, decoding, model=model)
        if progress:
            print(f"[pcd] {line} {part} {decoding}", flush=True)
        got = _cached(profile, unit, "eval.jsonl", lambda u=unit: run_eval_unit(u, progress), force)
        records += _tag(got, line=line, decoding=decoding, part=part)
    for alpha in prof.sweep_alphas:
        unit = _eval_unit(prof, prof.sweep_rope, "sweep", "pcd", alpha)
        if progress:
            print(f"[pcd] sweep alpha={alpha:g}", flush=True)
        got = _cached(profile, unit, "eval.jsonl", lambda u=unit: run_eval_unit(u, progress), force)
        records += _tag(got, line=line_of(prof.sweep_rope), decoding="pcd", part="sweep",
                        alpha=float(alpha))  # fmt: skip
    psa_runs = [(None, prof.model, prof.ropes)] if prof.ropes else []
    psa_runs += [(line, model, (ORIGINAL,)) for line, model in trained]
    for fixed_line, model, ropes in psa_runs:
        psa_cfg = PsaConfig(models=(model,), ropes=ropes, tasks=prof.psa_tasks,
                            lengths=prof.lengths, samples=prof.psa_samples)  # fmt: skip
        for decoding in ("greedy", "pcd"):
            records += _psa_records(profile, psa_cfg, prof, decoding, fixed_line, progress, force)
    return records, time.perf_counter() - start


def _psa_records(
    profile: str,
    psa_cfg: PsaConfig,
    prof: PcdProfile,
    decoding: str,
    fixed_line: str | None,
    progress: bool,
    force: bool,
) -> list[dict[str, Any]]:
    """PSA records of one configuration and decoding, tagged with their line (``fixed_line`` for
    a trained checkpoint, else the record's RoPE)."""
    pcd = prof.pcd if decoding == "pcd" else None
    unit = {"psa": psa_cfg.to_dict(), "pcd": pcd.as_dict() if pcd else None}
    if progress:
        print(f"[pcd] psa {fixed_line + ' ' if fixed_line else ''}{decoding}", flush=True)

    def measure() -> list[dict[str, Any]]:
        return run_psa(psa_cfg, progress=progress, pcd=pcd)[0]

    out = []
    for r in _cached(profile, unit, "psa.jsonl", measure, force):
        line = fixed_line or line_of(r["rope"])
        name = line if decoding == "greedy" else f"{line} +pcd"
        out.append({**r, "line": line, "decoding": decoding, "part": "psa", "extension": name})
    return out
