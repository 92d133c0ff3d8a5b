"""``reproduce pcd``: PCD's settings chosen on a dev split, then RULER by length, the short tasks
and PSA curves of a model, its zero-shot extensions and trained checkpoints, each with greedy
decoding and with PCD at the chosen settings, on a test split.

A profile's ``tables.pcd`` (:class:`PcdSettings`) declares the extensions (``none`` is the model
as it is), the trained checkpoints (Table 3's runs at the profile, as ``[row, extension]``), the
RULER tasks, lengths and samples, the short tasks, the PSA tasks and samples, PCD's fixed
parameters and the dev grid; the model and the device are the profile's.

*Dev split.* RULER samples are drawn from seeded generators; the dev samples use seed
``dev_seed`` (1), the test samples seed 0, so no sample is in both. On the dev lines
(``dev_lines``, default all), at ``dev_lengths`` with ``dev_samples`` samples per task and length,
greedy decoding and PCD at every (``alpha``, ``local_fraction``) of the grid are scored. The
chosen setting (:func:`~longred_bench.pcd.selection.choose`) has the highest mean dev RULER
score over all dev lines, tasks, lengths and samples; ties go to the smaller ``alpha``, then the
smaller fraction. ``alpha = 0`` (greedy decoding) is in the dev table as the reference but is not
a candidate. Every test unit with PCD uses the chosen setting, one rule for all lines; the test
units are known once the dev units are measured.

Every unit is saved under ``$LONGRED_CACHE/runs/pcd-<profile>-<hash>/`` and reused. Every record
gets ``line`` (``original``, the RoPE spec, or ``<row> <extension>`` for a trained checkpoint),
``decoding`` (``greedy`` or ``pcd``), ``part`` (``dev``, ``ruler``, ``short`` or ``psa``),
``unit`` (its cache folder) and ``unit_seconds`` (its compute time, ``None`` where not recorded);
dev records carry ``alpha`` and ``local_fraction`` (``alpha`` 0 for greedy).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from longred_bench.jobs.configs import ORIGINAL
from longred_bench.jobs.units import CachedUnit
from longred_bench.reproduce.spec import Context, Step, TableSpec, refuse

PCD_RUN_VERSION = 2  # bumped when a unit's measurement changes, so old caches are not reused
TEST_SEED = 0
# PSA's needle depths (percent), the same at every length: sample i at PSA_DEPTHS[i % 8].
PSA_DEPTHS = (6.25, 18.75, 31.25, 43.75, 56.25, 68.75, 81.25, 93.75)


@dataclass(frozen=True)
class PcdSettings:
    """``tables.pcd`` (see the module docstring); ``pcd`` holds PCD's fixed parameters
    (plausibility, beta, top_k: :class:`~longred_bench.pcd.config.PcdConfig`)."""

    ruler_tasks: tuple[str, ...]
    lengths: tuple[int, ...]
    ruler_samples: int
    short_tasks: tuple[str, ...]
    short_limit: int | None  # documents per short task; None: all of them
    psa_tasks: tuple[str, ...]
    psa_samples: int
    dev_samples: int
    ropes: tuple[str, ...] = (ORIGINAL,)
    grid_alphas: tuple[float, ...] = (0.5, 1.5, 3.0)  # candidate strengths (> 0)
    grid_fractions: tuple[float, ...] = (0.125, 0.25, 0.5)  # candidate local fractions
    dev_lengths: tuple[int, ...] = ()  # () = lengths
    dev_lines: tuple[str, ...] = ()  # () = every line
    dev_seed: int = 1
    phrasing: str = "standard"  # RULER's NIAH / vt strings: standard or heldout (tiny)
    pcd: dict[str, Any] = field(default_factory=dict)
    batch_size: int = 1
    trained: tuple[tuple[str, ...], ...] = ()
    device: str | None = None  # None: the profile's evaluation device

    def fixed(self) -> Any:
        """PCD's fixed parameters."""
        from longred_bench.pcd.config import PcdConfig

        return PcdConfig.from_dict(self.pcd)

    def grid(self) -> list[Any]:
        """The candidate PCD settings of the dev split, in order."""
        return [replace(self.fixed(), alpha=a, local_fraction=f, local_window=None,
                        local_base=None)
                for a in self.grid_alphas for f in self.grid_fractions]  # fmt: skip


def _check(ctx: Context) -> None:
    s = ctx.settings
    if not s.grid_alphas or not s.grid_fractions or min(s.grid_alphas) <= 0:
        raise refuse(ctx, "tables.pcd.grid_alphas", "give alphas > 0 and at least one fraction "
                     "(alpha 0 is greedy, always the reference)")  # fmt: skip
    if s.dev_seed == TEST_SEED:
        raise refuse(ctx, "tables.pcd.dev_seed", f"must differ from the test seed {TEST_SEED}")
    if any(len(t) != 2 for t in s.trained):
        raise refuse(ctx, "tables.pcd.trained", "each entry is [row, extension]")
    unknown = sorted(set(s.dev_lines) - {line for line, _, _ in lines(ctx)})
    if unknown:
        raise refuse(ctx, "tables.pcd.dev_lines", f"{unknown[0]!r} is not a line of the table")


def line_of(rope: str) -> str:
    """The report's name of an extension: ``original`` for the model as it is."""
    return "original" if rope == ORIGINAL else rope


def trained_line(row: str, extension: str) -> str:
    """The report's name of a trained checkpoint's line, e.g. ``longred-c abf:theta=4e5``."""
    return f"{row} {extension}"


def _train_units(ctx: Context) -> list[tuple[str, CachedUnit]]:
    from longred_bench.jobs.units import train_unit
    from longred_bench.reproduce.grid import TrainedRow
    from longred_bench.reproduce.table3 import table3_grid

    if not ctx.settings.trained:
        return []
    grid = table3_grid(ctx.profile, "pcd")
    return [(trained_line(row, ext), train_unit(TrainedRow(row, ext, 0).config(grid)))
            for row, ext in ctx.settings.trained]  # fmt: skip


def lines(ctx: Context) -> list[tuple[str, str | None, str]]:
    """``(line, model directory or None for the profile's model, RoPE)`` of every line."""
    out = [(line_of(rope), None, rope) for rope in ctx.settings.ropes]
    return out + [(line, str(u.dir / "final"), ORIGINAL) for line, u in _train_units(ctx)]


def eval_config(ctx: Context, rope: str, part: str, pcd: Any = None, model: str | None = None
                ) -> dict[str, Any]:  # fmt: skip
    """One evaluation (of ``model``, default the profile's) of ``part`` (``dev``, ``ruler`` or
    ``short``), with PCD at ``pcd`` (greedy when ``None``)."""
    s = ctx.settings
    unit: dict[str, Any] = {
        "model": model or ctx.profile.model.name,
        "rope": None if rope == ORIGINAL else rope,
        "batch_size": s.batch_size,
        "device": s.device or ctx.profile.evaluation.device,
        "seed": s.dev_seed if part == "dev" else TEST_SEED,
        "item_scores": True,
    }
    if part == "short":
        # Every line gets the original's window, so greedy and PCD, and every extension, score
        # the same documents.
        unit.update(suite="short", tasks=[*s.short_tasks], limit=s.short_limit,
                    max_length=ctx.profile.model.window)  # fmt: skip
    else:
        dev = part == "dev"
        unit.update(
            suite="ruler", tasks=[f"longred_ruler_{t}" for t in s.ruler_tasks],
            lengths=[*(s.dev_lengths or s.lengths)] if dev else [*s.lengths],
            samples=s.dev_samples if dev else s.ruler_samples, phrasing=s.phrasing,
        )  # fmt: skip
    if pcd is not None:
        unit.update(decoding="pcd", pcd=pcd.as_dict())
    return unit


def pcd_unit(ctx: Context, kind: str, config: dict[str, Any]) -> CachedUnit:
    """A unit of the table's own cache folder, ``runs/pcd-<profile>-<hash>``."""
    from longred_bench.jobs.key_root import portable
    from longred_bench.jobs.local_files import local_stamps
    from longred_bench.results import config_hash

    key = config_hash(
        portable(
            {
                **config,
                **local_stamps(config),  # a local model's files
                "pcd_run_version": PCD_RUN_VERSION,
            }
        )
    )  # cache can move
    return CachedUnit(kind, f"runs/pcd-{ctx.profile.name}-{key}", config)


def _dev_steps(ctx: Context) -> list[Step]:
    steps = []
    after = {line: (u.folder,) for line, u in _train_units(ctx)}
    for line, model, rope in lines(ctx):
        if ctx.settings.dev_lines and line not in ctx.settings.dev_lines:
            continue
        for cfg in [None, *ctx.settings.grid()]:
            dec = "greedy" if cfg is None else "pcd"
            labels = {"line": line, "decoding": dec, "part": "dev",
                      "alpha": 0.0 if cfg is None else cfg.alpha,
                      "local_fraction": None if cfg is None else cfg.local_fraction}  # fmt: skip
            name = f"dev {line} {dec}" + (
                "" if cfg is None else f" alpha={cfg.alpha:g} fraction={cfg.local_fraction:g}"
            )
            unit = pcd_unit(ctx, "eval", eval_config(ctx, rope, "dev", cfg, model=model))
            steps.append(Step(unit, name, 0.4, after=after.get(line, ()), labels=labels))
    return steps


def chosen(ctx: Context) -> Any:
    """PCD's setting chosen on the dev split, or None while a dev unit is missing."""
    from longred_bench.pcd.selection import choose

    records: list[dict[str, Any]] = []
    for step in _dev_steps(ctx):
        got = step.unit.cached()
        if got is None:
            return None
        records += [{**r, **(step.labels or {})} for r in got]
    return choose(records, ctx.settings.grid())


def _test_steps(ctx: Context, best: Any) -> list[Step]:
    from longred_bench.jobs.configs import PsaConfig

    s = ctx.settings
    steps = []
    after = {line: (u.folder,) for line, u in _train_units(ctx)}
    for part in ("ruler", "short"):
        for line, model, rope in lines(ctx):
            for dec in ("greedy", "pcd"):
                config = eval_config(ctx, rope, part, best if dec == "pcd" else None, model)
                labels = {"line": line, "decoding": dec, "part": part}
                steps.append(Step(pcd_unit(ctx, "eval", config), f"{line} {part} {dec}", 0.4,
                                  after=after.get(line, ()), labels=labels))  # fmt: skip
    psa_runs = [(None, ctx.profile.model.name, s.ropes)] if s.ropes else []
    psa_runs += [(line, model, (ORIGINAL,)) for line, model, rope in lines(ctx)[len(s.ropes) :]]
    for fixed_line, model, ropes in psa_runs:
        psa = PsaConfig(models=(model,), ropes=ropes, tasks=s.psa_tasks, lengths=s.lengths,
                        samples=s.psa_samples, depths=PSA_DEPTHS,
                        device=s.device or ctx.profile.evaluation.device)  # fmt: skip
        for pcd in (None, best):
            dec = "greedy" if pcd is None else "pcd"
            config = {"psa": psa.to_dict(), "pcd": pcd.as_dict() if pcd else None}
            steps.append(
                Step(
                    pcd_unit(ctx, "psa", config),
                    f"psa {fixed_line + ' ' if fixed_line else ''}{dec}",
                    0.8,
                    after=after.get(fixed_line or "", ()),
                    labels={"line": fixed_line, "decoding": dec, "part": "psa"},
                )
            )
    return steps


def _steps(ctx: Context) -> list[Step]:
    train = [Step(u, f"train {line} seed 0") for line, u in _train_units(ctx)]
    best = chosen(ctx)
    return [*train, *_dev_steps(ctx), *([] if best is None else _test_steps(ctx, best))]


def _note(ctx: Context) -> str | None:
    if chosen(ctx) is not None:
        return None
    n = len(lines(ctx))
    return (f"then the test split, once the dev grid is measured: {4 * n} evaluations and "
            f"{2 * (bool(ctx.settings.ropes) + len(ctx.settings.trained))} PSA measurements "
            "with greedy decoding and the chosen PCD setting")  # fmt: skip


def _records(ctx: Context) -> list[dict[str, Any]]:
    """Every record of the table, tagged (see the module docstring): the dev grid, then the
    test units at the chosen setting."""
    records = _gather(ctx, _dev_steps(ctx))
    best = chosen(ctx)
    if ctx.progress:
        print(f"[pcd] chosen on dev: alpha={best.alpha:g} fraction={best.local_fraction:g}",
              flush=True)  # fmt: skip
    for step in _test_steps(ctx, best):
        got = _gather(ctx, [step])
        if step.unit.kind == "psa":  # a line per RoPE where the PSA run measured several
            for r in got:
                line = r["line"] or line_of(r["rope"])
                r.update(line=line, extension=line if r["decoding"] == "greedy" else
                         f"{line} +pcd")  # fmt: skip
        records += got
    return records


def _gather(ctx: Context, steps: list[Step]) -> list[dict[str, Any]]:
    """The steps' records, each also tagged with its unit's folder and compute time."""
    from longred_bench.reproduce.engine import gather

    out = []
    for step in steps:
        tags = {"unit": step.unit.name, "unit_seconds": step.unit.seconds()}
        out += [{**r, **tags} for r in gather(ctx, [step])]
    return out


def profile_model(records: list[dict[str, Any]]) -> str:
    """The profile's model, read from the records (a rebuild has no profile to ask): the model of
    the lines that are the profile's model as it is or extended zero-shot (``line`` is its RoPE's
    name; an evaluation record of the model as it is says ``rope: null``), not a trained
    checkpoint's folder."""
    for r in records:
        if r.get("line") == line_of(str(r.get("rope") or ORIGINAL)) and r.get("model"):
            return str(r["model"])
    return "the profile's model"


def _build(records: list[dict[str, Any]], out: Any, *, profile: str, command: str,
           wall_seconds: float, wall_note: str) -> list[Any]:  # fmt: skip
    from longred_bench.reports.pcd_plot import build_pcd_report
    from longred_bench.reports.psa_report import TOP_K

    return build_pcd_report(records, out, profile=profile, model=profile_model(records),
                            command=command, seconds=wall_seconds, top_k=TOP_K,
                            wall_note=wall_note)  # fmt: skip


SPEC = TableSpec(
    "pcd", "Positional Contrastive Decoding: RULER, PSA and short tasks, greedy against PCD",
    PcdSettings, _steps, build=_build, records=_records, check=_check, note=_note,
    default_profile="smol",
)  # fmt: skip
