"""The runs of ``reproduce pcd``: PCD's settings chosen on a dev split, then RULER by length, the
short tasks and PSA curves of a model, its zero-shot extensions and trained checkpoints, each with
greedy decoding and with PCD at the chosen settings, on a test split.

A profile (:data:`PCD_PROFILES`) declares the model, the extensions (``none`` is the model as
it is), the trained checkpoints, the RULER tasks, lengths and samples, the short tasks, the PSA
tasks and samples, PCD's fixed parameters and the dev grid.

*Dev split.* RULER samples are drawn from seeded generators; the dev samples use seed
``dev_seed`` (1), the test samples seed 0, so no sample is in both. On the dev lines
(``dev_lines``, default all), at ``dev_lengths`` with ``dev_samples`` samples per task and length,
greedy decoding and PCD at every (``alpha``, ``local_fraction``) of the grid are scored. The
chosen setting (:func:`choose`) is the one with the highest mean dev RULER score over all dev
lines, tasks, lengths and samples; ties go to the smaller ``alpha``, then the smaller fraction.
``alpha = 0`` (greedy decoding) is always in the dev table as the reference but is not a
candidate: the trial asks how well PCD can do, so it is run at its best dev setting. Every test
unit with PCD uses the chosen setting, one rule for all lines.

Every unit (one evaluation, or one PSA measurement) is saved under
``$LONGRED_CACHE/runs/pcd-<profile>-<hash>/`` beside the config that made it and the seconds it
took, and reused when asked again, so an interrupted run resumes unit by unit. Evaluations keep
per-document scores and the generated strings (``eval_item`` records) for the paired verdicts and
the failure listing of :mod:`longred_bench.reports.pcd_report`.

Every record gets ``line`` (``original``, the RoPE spec, or ``<row> <extension>`` for a trained
checkpoint), ``decoding`` (``greedy`` or ``pcd``) and ``part`` (``dev``, ``ruler``, ``short`` or
``psa``), ``unit`` (its cache folder) and ``unit_seconds`` (the compute time of that unit, ``None``
for units saved before it was recorded); dev records carry ``alpha`` and ``local_fraction``
(``alpha`` 0 for greedy).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

from longred_bench.cache import cache_dir
from longred_bench.errors import UserError
from longred_bench.jobs.configs import ORIGINAL, PsaConfig
from longred_bench.jobs.psa import run_psa
from longred_bench.jobs.units import cached_records, run_eval_unit, save_records, unit_seconds
from longred_bench.pcd.config import PcdConfig
from longred_bench.pcd.selection import choose
from longred_bench.results import config_hash

PCD_RUN_VERSION = 2  # bumped when a unit's measurement changes, so old caches are not reused
TEST_SEED = 0


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
    grid_alphas: tuple[float, ...]  # candidate strengths (> 0); alpha 0 is the reference row
    grid_fractions: tuple[float, ...]  # candidate local fractions of the prompt
    dev_samples: int
    dev_lengths: tuple[int, ...] = ()  # () = lengths
    dev_lines: tuple[str, ...] = ()  # () = every line
    dev_seed: int = 1
    phrasing: str = "standard"  # RULER's NIAH / vt strings: standard or heldout (tiny)
    pcd: PcdConfig = field(default_factory=PcdConfig)  # fixed parameters (plausibility, beta)
    batch_size: int = 1
    # Trained checkpoints of Table 3 at the same profile, as (row, extension): each is one more
    # line, evaluated as saved (its own extended RoPE), with the original's window for short tasks.
    trained: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if not self.grid_alphas or not self.grid_fractions:
            raise ValueError("a PCD profile needs at least one grid alpha and one fraction")
        if min(self.grid_alphas) <= 0:
            raise ValueError("grid alphas must be > 0 (alpha 0 is greedy, always the reference)")
        if self.dev_seed == TEST_SEED:
            raise ValueError(f"dev_seed must differ from the test seed {TEST_SEED}")

    def grid(self) -> list[PcdConfig]:
        """The candidate PCD settings of the dev split, in order."""
        return [replace(self.pcd, alpha=a, local_fraction=f, local_window=None, local_base=None)
                for a in self.grid_alphas for f in self.grid_fractions]  # fmt: skip


SMOL_SHORT_TASKS = (
    "longred_mmlu", "longred_hellaswag", "longred_piqa", "longred_winogrande",
    "longred_arc_easy", "longred_arc_challenge", "longred_boolq",
)  # fmt: skip
TINY_SHORT_TASKS = ("longred_tiny_swap", "longred_tiny_replace", "longred_tiny_cloze",
                    "longred_tiny_nextsent")  # fmt: skip
GRID_ALPHAS = (0.5, 1.5, 3.0)
# PSA's needle depths (percent), the same at every length: sample i at PSA_DEPTHS[i % 8].
PSA_DEPTHS = (6.25, 18.75, 31.25, 43.75, 56.25, 68.75, 81.25, 93.75)
GRID_FRACTIONS = (0.125, 0.25, 0.5)
PCD_PROFILES: dict[str, PcdProfile] = {
    "tiny": PcdProfile(
        model="tiny-base",
        ropes=(ORIGINAL, "abf:theta=4e5"),
        ruler_tasks=("niah_single_1", "niah_single_2", "niah_multikey_1", "vt"),
        lengths=(512, 1024, 2048),
        ruler_samples=32,
        short_tasks=TINY_SHORT_TASKS,
        short_limit=200,
        psa_tasks=("niah_single_1", "niah_single_2"),
        psa_samples=32,
        grid_alphas=GRID_ALPHAS,
        grid_fractions=GRID_FRACTIONS,
        dev_samples=8,
        dev_lengths=(1024, 2048),
        dev_lines=("abf:theta=4e5", "cpt abf:theta=4e5", "longred-c abf:theta=4e5"),
        phrasing="heldout",
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
        grid_alphas=(0.5, 3.0),
        grid_fractions=(0.25,),
        dev_samples=1,
        dev_lengths=(512,),
        dev_lines=("pi:factor=4",),
    ),
    "smol": PcdProfile(
        model="smollm2-135m",
        ropes=(ORIGINAL,),
        ruler_tasks=("niah_single_2", "niah_multikey_1", "niah_multivalue", "vt"),
        lengths=(1024, 2048),
        ruler_samples=24,
        short_tasks=SMOL_SHORT_TASKS,
        short_limit=20,
        psa_tasks=("niah_single_2", "niah_single_3"),
        psa_samples=32,
        grid_alphas=GRID_ALPHAS,
        grid_fractions=GRID_FRACTIONS,
        dev_samples=6,
        dev_lengths=(2048,),
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
    pcd: PcdConfig | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    """The :func:`longred_bench.jobs.units.run_eval_unit` config of one evaluation (of ``model``,
    default the profile's) of ``part`` (``dev``, ``ruler`` or ``short``), with PCD at ``pcd``
    (greedy when ``None``)."""
    from longred_bench.models.loading import load_config

    unit: dict[str, Any] = {
        "model": model or prof.model,
        "rope": None if rope == ORIGINAL else rope,
        "batch_size": prof.batch_size,
        "device": "cpu",
        "seed": prof.dev_seed if part == "dev" else TEST_SEED,
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
        dev = part == "dev"
        unit.update(
            suite="ruler", tasks=[f"longred_ruler_{t}" for t in prof.ruler_tasks],
            lengths=[*(prof.dev_lengths or prof.lengths)] if dev else [*prof.lengths],
            samples=prof.dev_samples if dev else prof.ruler_samples, phrasing=prof.phrasing,
        )  # fmt: skip
    if pcd is not None:
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
        start = time.perf_counter()
        records = compute()
        seconds = time.perf_counter() - start
        got = save_records(path, unit, records, seed=0, device="cpu", seconds=seconds)
    # Which unit each record came from and what it cost when computed (None: not recorded).
    return _tag(got, unit=path.parent.name, unit_seconds=unit_seconds(path.parent))


def _tag(records: list[dict[str, Any]], **tags: Any) -> list[dict[str, Any]]:
    return [{**r, **tags} for r in records]


def run_pcd(
    profile: str, *, progress: bool = True, force: bool = False
) -> tuple[list[dict[str, Any]], float]:
    """Run (or reuse, unless ``force``) every unit of ``profile``: the dev grid, then the test
    units with PCD at the chosen setting; all records, tagged, and the wall seconds."""
    if profile not in PCD_PROFILES:
        raise UserError(f"pcd has no profile {profile!r}; available: {', '.join(PCD_PROFILES)}")
    prof = PCD_PROFILES[profile]
    start = time.perf_counter()
    trained = _trained_models(profile, prof, progress)
    targets = [(line_of(rope), None, rope) for rope in prof.ropes]
    targets += [(line, model, ORIGINAL) for line, model in trained]
    unknown = sorted(set(prof.dev_lines) - {line for line, _, _ in targets})
    if unknown:
        raise UserError(f"pcd profile {profile!r}: dev lines {unknown} are not lines of it")
    records: list[dict[str, Any]] = []
    for line, model, rope in targets:
        if prof.dev_lines and line not in prof.dev_lines:
            continue
        for cfg in [None, *prof.grid()]:
            unit = _eval_unit(prof, rope, "dev", cfg, model=model)
            dec = "greedy" if cfg is None else "pcd"
            if progress:
                print(f"[pcd] dev {line} {dec}"
                      + ("" if cfg is None else f" alpha={cfg.alpha:g} "
                         f"fraction={cfg.local_fraction:g}"), flush=True)  # fmt: skip
            got = _cached(profile, unit, "eval.jsonl", lambda u=unit: run_eval_unit(u, progress),
                          force)  # fmt: skip
            records += _tag(got, line=line, decoding=dec, part="dev",
                            alpha=0.0 if cfg is None else cfg.alpha,
                            local_fraction=None if cfg is None else cfg.local_fraction)  # fmt: skip
    chosen = choose(records, prof.grid())
    if progress:
        print(f"[pcd] chosen on dev: alpha={chosen.alpha:g} fraction={chosen.local_fraction:g}",
              flush=True)  # fmt: skip
    jobs = [(target, part, dec) for part in ("ruler", "short") for target in targets
            for dec in ("greedy", "pcd")]  # fmt: skip
    for (line, model, rope), part, decoding in jobs:
        unit = _eval_unit(prof, rope, part, chosen if decoding == "pcd" else None, model=model)
        if progress:
            print(f"[pcd] {line} {part} {decoding}", flush=True)
        got = _cached(profile, unit, "eval.jsonl", lambda u=unit: run_eval_unit(u, progress), force)
        records += _tag(got, line=line, decoding=decoding, part=part)
    psa_runs = [(None, prof.model, prof.ropes)] if prof.ropes else []
    psa_runs += [(line, model, (ORIGINAL,)) for line, model in trained]
    for fixed_line, model, ropes in psa_runs:
        psa_cfg = PsaConfig(models=(model,), ropes=ropes, tasks=prof.psa_tasks,
                            lengths=prof.lengths, samples=prof.psa_samples,
                            depths=PSA_DEPTHS)  # fmt: skip
        for pcd in (None, chosen):
            records += _psa_records(profile, psa_cfg, pcd, fixed_line, progress, force)
    return records, time.perf_counter() - start


def _psa_records(
    profile: str,
    psa_cfg: PsaConfig,
    pcd: PcdConfig | None,
    fixed_line: str | None,
    progress: bool,
    force: bool,
) -> list[dict[str, Any]]:
    """PSA records of one configuration, greedy or with PCD at ``pcd``, tagged with their line
    (``fixed_line`` for a trained checkpoint, else the record's RoPE)."""
    decoding = "greedy" if pcd is None else "pcd"
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
