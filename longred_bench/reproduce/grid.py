"""The run grid of the training tables (Tables 2-7, 10, LinearARD, LongRecipe): rows trained at
each extension with their seeds, and the evaluations of the base model and of every checkpoint.

A grid is a profile's model, budget and evaluation with a table's own rows, extensions, seeds and
overrides (:class:`GridSettings`, the table's ``tables.<name>`` section over the profile's
``runs``). Every trained row of an extension uses the same recipe budget at that profile (so the
same optimizer steps and tokens per step), differing only in recipe, RoPE and seed. A row with
``k`` seeds is trained with seeds ``0 .. k-1`` at every extension; ``control`` keeps the original
RoPE, so each of its seeds is trained once and shared by every extension. Seed 0's config is the
one a single-seed profile trains, so adding seeds reuses the cached seed-0 runs. Tables share runs
through the run cache: a unit is keyed by its config, wherever it is asked from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from longred_bench.errors import UserError
from longred_bench.jobs.units import CachedUnit, run_dir_of, train_unit, unit_folder
from longred_bench.profiles.loader import merge
from longred_bench.profiles.schema import Evaluation, Profile, build, to_dict
from longred_bench.reproduce.rows import (
    ABLATION_ROWS,
    LIGHT_CPT,
    LITE_STEPS,
    LITE_TOKENS,
    REPLAY_IN_BUDGET,
    ROW_RECIPE,
    ablation_overrides,
)
from longred_bench.reproduce.spec import Context, Step, refuse


@dataclass(frozen=True)
class GridSettings:
    """A training table's section of a profile; each key left out takes the profile's ``runs``
    value (``rows``: the table's own). ``seeds``: a number for every compared row (rows outside
    the table's comparison train one), or a mapping row -> seeds. ``overrides`` (training keys)
    and ``evaluation`` (keys of the profile's ``evaluation``) are merged over the profile's."""

    extensions: tuple[str, ...] | None = None
    rows: tuple[str, ...] | None = None
    seeds: int | dict[str, int] | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    evaluation: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunGrid:
    """What a training table trains and evaluates at one profile."""

    profile: Profile
    extensions: tuple[str, ...]
    rows: tuple[str, ...]
    seeds: dict[str, int]
    overrides: dict[str, Any]
    evaluation: Evaluation

    @property
    def model(self) -> str:
        return self.profile.model.name

    def seed_count(self, row: str) -> int:
        """How many seeds ``row`` is trained with."""
        return self.seeds.get(row, 1)


def table_evaluation(profile: Profile, override: dict[str, Any], table: str) -> Evaluation:
    """The profile's evaluation with a table's ``evaluation`` keys merged over it."""
    from longred_bench.profiles.loader import check_ruler_tasks

    merged = merge(to_dict(profile.evaluation), override)
    file = profile.source or profile.name
    ev = build(Evaluation, merged, file=file, where=f"tables.{table}.evaluation")
    check_ruler_tasks(ev.ruler.tasks, file, f"tables.{table}.evaluation.ruler.tasks")
    return ev


def make_grid(
    ctx: Context, rows: tuple[str, ...], compared: tuple[str, ...], *, d1: str = "retrieval"
) -> RunGrid:
    """The grid of table ``ctx`` (its default ``rows``; ``compared``: those a verdict compares,
    which get the profile's seeds). ``d1``: ``prose`` drops the long-data overrides (Table 3's
    variant on the recipes' own D1, prose only)."""
    s, prof = ctx.settings, ctx.profile
    rows = s.rows if s.rows is not None else rows
    unknown = [r for r in rows if r not in ROW_RECIPE]
    if unknown:
        raise refuse(ctx, f"tables.{ctx.table}.rows", f"unknown row {unknown[0]!r} (rows: "
                     f"{', '.join(ROW_RECIPE)})")  # fmt: skip
    if isinstance(s.seeds, dict):
        seeds = dict(s.seeds)
        extra = sorted(set(seeds) - set(rows))
        if extra:
            raise refuse(ctx, f"tables.{ctx.table}.seeds", f"row {extra[0]!r} is not a row of "
                         "the table")  # fmt: skip
    else:
        count = prof.runs.seeds if s.seeds is None else s.seeds
        seeds = {r: count for r in rows if r in compared}
    if any(k < 1 for k in seeds.values()):
        raise refuse(ctx, f"tables.{ctx.table}.seeds", "a row needs at least one seed")
    overrides = {k: v for k, v in {**prof.runs.overrides, **s.overrides}.items()
                 if v is not None}  # null: no override (an inherited one given up)  # fmt: skip
    if d1 == "prose":
        overrides = {k: v for k, v in overrides.items() if k not in D1_KEYS}
    extensions = s.extensions if s.extensions is not None else prof.runs.extensions
    if not extensions:
        raise refuse(ctx, "runs.extensions", "a training table needs at least one extension")
    evaluation = table_evaluation(prof, s.evaluation, ctx.table)
    grid = RunGrid(prof, tuple(extensions), tuple(rows), seeds, overrides, evaluation)
    from longred_bench.reproduce import ruler_fit

    for ext in grid.extensions:
        if not ruler_lengths_for(grid, ext):
            window, key = extension_window(grid, ext), ruler_fit.ruler_keys(ctx)[0]
            given = ", ".join(str(n) for n in grid.evaluation.ruler.lengths)
            fits = min(extension_window(grid, e) for e in grid.extensions)  # every extension's
            least = ruler_fit.least_length(grid.model, evaluation, zoo=True)  # the tasks' own
            none = least and ruler_fit.none_fits(ctx, ruler_fit.windows_of(grid), *least[:2])
            unsure = "" if least and not least[2] else (  # some tasks' data is not cached
                f" if it holds the tasks (`longred-bench models --model {grid.model}` prints "
                "the smallest RULER length once the data is fetched)")  # fmt: skip
            raise refuse(ctx, key, none or f"no length of {given} fits {ext}'s {window}-token "
                         f"window; give one of at most {window}, e.g. {key}: [{fits}]"
                         + unsure)  # fmt: skip
    ruler_fit.check_tasks_fit(ctx, grid)
    return grid


# Long data (D1) of every trained row of Table 3. ``retrieval``: the profile's own (at tiny,
# Austen + KJV plus retrieval rows built at the long length); ``prose``: the recipes' own D1
# (Austen + KJV prose only). A variant changes only the training overrides, so its runs are cached
# apart.
D1_VARIANTS = ("retrieval", "prose")
D1_KEYS = ("long_data", "retrieval_fraction")


def extension_window(grid: RunGrid, extension: str) -> int:
    """The window of the profile's model extended by ``extension`` (from the profile's stated
    window: nothing is loaded)."""
    from longred_bench.models.rope import target_window

    return target_window(extension, grid.profile.model.window)


def ruler_lengths_for(grid: RunGrid, extension: str | None) -> list[int]:
    """The RULER lengths rows of ``extension`` are scored at: those within its window (all of
    the profile's for the original model)."""
    lengths = list(grid.evaluation.ruler.lengths)
    if extension is None:
        return lengths
    window = extension_window(grid, extension)
    return [n for n in lengths if n <= window]


@dataclass(frozen=True)
class TrainedRow:
    """One training run of a grid: its row, extension (None: original RoPE) and seed."""

    row: str
    extension: str | None
    seed: int

    def config(self, grid: RunGrid) -> Any:
        """The resolved training config of this run; a value of the profile that cannot train
        is refused in one line naming the profile and this run (the message names the key)."""
        try:
            return self._config(grid)
        except UserError as exc:
            if str(exc).startswith("profile "):
                raise
            spec = grid.profile.source or grid.profile.name
            recipe = ROW_RECIPE[self.row][0]
            at = self.extension or "the original RoPE"
            raise UserError(f"profile {spec}: the {self.row} run at {at}, seed {self.seed}: {exc} "
                            f"(set under training.{recipe}, runs.overrides or the table's "
                            "overrides)") from None  # fmt: skip

    def _config(self, grid: RunGrid) -> Any:
        from longred_bench.training.config import resolve_config

        prof = grid.profile
        spec = prof.source or prof.name
        recipe, extra = ROW_RECIPE[self.row]
        overrides = {**grid.overrides, **extra, "seed": self.seed, "model": grid.model}
        if recipe == "merge":  # the RoPE is the trained model's own
            source = merge_source(self)
            overrides["merge_with"] = str(run_dir_of(source.config(grid)) / "final")
            return resolve_config(recipe, profile=spec, overrides=overrides)
        if self.extension is None:
            return at_original_window(resolve_config(recipe, profile=spec, overrides=overrides),
                                      prof.model.window)  # fmt: skip
        # LongRecipe's share of the window, read at the profile's own RoPE (before the table's)
        within = within_share(recipe, spec, overrides, prof.model.window)
        overrides["rope"] = self.extension
        if recipe == "linearard":  # the student starts from the light CPT run (rows.LIGHT_CPT)
            overrides["init"] = str(run_dir_of(light_cpt_source(self).config(grid)) / "final")
        if self.row in ABLATION_ROWS:
            top_m = resolve_config(recipe, profile=spec, overrides=overrides).top_m
            overrides.update(ablation_overrides(self.row, model_depth(grid), prof.model.window,
                                                top_m))  # fmt: skip
        cfg = resolve_config(recipe, profile=spec, overrides=overrides)
        if self.row == "cpt-light":
            cfg = cfg.replace(steps=max(1, cfg.steps // LIGHT_CPT))
        if self.row.startswith("linearard-lite"):
            cfg = lite_budget(cfg, prof.model.window, prof.hardware.nproc_per_node)
        if self.row in REPLAY_IN_BUDGET:
            cfg = replay_within_budget(cfg)
        # An extension whose window is shorter than the recipe's long length (PI x2 of a
        # 256-token model: 512) trains at its whole window, not beyond it. LongRecipe's samples
        # lie below the window they are spread over: the share of it the profile states
        # (within_share), at least the original window, as PoSE's and RPES's.
        window = extension_window(grid, self.extension)
        if within is not None:
            share = round(within * window)
            cfg = cfg.replace(long_len=min(window - 1, max(prof.model.window, share)))
            cfg = split_micro_steps(cfg, prof.model.window, prof.hardware.nproc_per_node)
        elif window < cfg.long_len:
            cfg = cfg.replace(long_len=window)
        return at_original_window(cfg, prof.model.window)


# Recipes whose long samples lie within the extended window (spread over it), with the share of
# that window they take where the profile states none (within_share): LongRecipe's "about 30%
# of the target window" (PoSE and RPES take the original window: ORIGINAL_WINDOW_RECIPES).
WITHIN_SHARE = {"longrecipe": 0.3}


def within_share(recipe: str, spec: str, overrides: dict[str, Any], window: int) -> float | None:
    """The share of the extended window the samples of ``recipe`` take in a table, where it is
    a :data:`WITHIN_SHARE` recipe (else None): the ``long_len`` profile ``spec`` (with
    ``overrides``) gives it over the window its own ``rope`` gives the model of ``window``
    tokens, so that a table at another extension keeps the profile's proportion (tiny and smol:
    320 of 1,024 and 10,240 of 32,768 tokens); the recipe's default share where the profile
    gives it no RoPE or a length that does not fit below that window."""
    if recipe not in WITHIN_SHARE:
        return None
    from longred_bench.models.rope import target_window
    from longred_bench.training.config import resolve_config

    try:
        own = resolve_config(recipe, profile=spec, overrides=overrides)
    except UserError:  # no RoPE of its own (a table's extension gives it one)
        return WITHIN_SHARE[recipe]
    if not own.rope:
        return WITHIN_SHARE[recipe]
    share = own.long_len / target_window(own.rope, window)
    return share if share < 1 else WITHIN_SHARE[recipe]


# Recipes whose long rows are the original window: ``control`` (the original RoPE) and PoSE /
# RPES (samples of the original window stretched over the extended one).
ORIGINAL_WINDOW_RECIPES = ("control", "pose", "rpes")


def at_original_window(cfg: Any, window: int) -> Any:
    """``cfg`` with its long rows at most the model's ``window`` where its recipe's rows are the
    original window's (:data:`ORIGINAL_WINDOW_RECIPES`): a profile's lengths follow a model of a
    smaller window (a 4K model in a profile extending ``smol``'s 8K)."""
    if cfg.recipe in ORIGINAL_WINDOW_RECIPES and window < cfg.long_len:
        return cfg.replace(long_len=window)
    return cfg


def model_depth(grid: RunGrid) -> int:
    """The profile model's decoder layers: as the profile states, else from its config."""
    if grid.profile.model.layers is not None:
        return grid.profile.model.layers
    from longred_bench.training.model_plan import planning_config

    return int(planning_config(grid.model).num_hidden_layers)


def merge_source(run: TrainedRow) -> TrainedRow:
    """The trained run a ``merge`` row interpolates with the original: ``cpt`` at the same
    extension and seed."""
    if run.extension is None:
        raise UserError("a merge row needs an extension: its RoPE is the trained model's")
    return TrainedRow("cpt", run.extension, run.seed)


def light_cpt_source(run: TrainedRow) -> TrainedRow:
    """The light CPT run a LinearARD row's student starts from: ``cpt-light`` at the same
    extension and seed."""
    return TrainedRow("cpt-light", run.extension, run.seed)


def split_micro_steps(cfg: Any, window: int, processes: int) -> Any:
    """``cfg`` with the most micro-steps, up to its own, whose rows split over ``processes``
    (training's startup check, :func:`~longred_bench.training.plan.check_row_split`): a length
    taken as a share of the window (LongRecipe at paper: 9,830 of 32,768 tokens) seldom divides
    the profile's micro-steps. ``cfg`` as it is where it splits already or no count does (the
    dry-run then marks the unit as unable to start)."""
    if processes == 1:
        return cfg
    from longred_bench.training.plan import check_row_split, micro_rows, micro_steps

    own = micro_steps(cfg)
    for count in range(own, 0, -1):
        candidate = cfg if count == own else cfg.replace(micro_tokens=cfg.tokens_per_step // count)
        try:
            check_row_split(micro_rows(candidate, window), processes)
        except UserError:
            continue
        return candidate
    return cfg


def lite_budget(cfg: Any, window: int, processes: int) -> Any:
    """LinearARD's ``cfg`` at the reduced budget of the ``-lite`` rows: 1/``LITE_STEPS`` of the
    steps at 1/``LITE_TOKENS`` of the tokens per step. Its rows are of the original ``window``;
    where each micro-step's rows do not split over ``processes`` (training's startup check,
    :func:`~longred_bench.training.plan.check_row_split`; e.g. Mistral-7B's 32K rows: 4 a step
    over 8 GPUs), a step takes the next multiple of ``processes`` rows whose micro-steps split
    and the steps shrink by as much, so the run reads about the same tokens. Where none up to
    4x does, the budget is left as it is and the dry-run marks the unit as unable to start."""
    steps = max(1, cfg.steps // LITE_STEPS)
    tokens = cfg.tokens_per_step // LITE_TOKENS
    lite = cfg.replace(steps=steps, tokens_per_step=tokens)
    if processes == 1:
        return lite
    from longred_bench.training.plan import check_row_split, micro_rows

    rows = tokens // window
    first = max(processes, -(-rows // processes) * processes)
    for whole in range(first, 4 * first + 1, processes):
        if whole == rows:
            candidate = lite
        else:
            candidate = cfg.replace(
                steps=max(1, steps * rows // whole), tokens_per_step=whole * window
            )
        try:
            check_row_split(micro_rows(candidate, window), processes)
        except UserError:
            continue
        return candidate
    return lite


def replay_within_budget(cfg: Any) -> Any:
    """LongRecipe's ``cfg`` at the other rows' steps and tokens: the last quarter of ``steps``
    (at least one) replays original-window text, and each stage reads ``tokens_per_step`` tokens
    a step (the two streams mixed 1 : 1 over twice the tokens, one stage at a time), so the run
    takes as many steps and about as many tokens as a CPT run of ``cfg.steps`` steps."""
    if cfg.steps < 2:
        raise UserError(f"LongRecipe's replay within the budget needs steps >= 2, got {cfg.steps}")
    replay = max(1, cfg.steps // 4)
    return cfg.replace(
        steps=cfg.steps - replay, replay_steps=replay, mix_long=1.0, mix_short=1.0,
        tokens_per_step=2 * cfg.tokens_per_step,
    )  # fmt: skip


def trained_rows(grid: RunGrid) -> list[TrainedRow]:
    """Every training run of the grid: each row with each of its seeds at every extension
    (``control`` once per seed: it keeps the original RoPE), seed by seed, so the first runs
    make a complete single-seed table."""
    runs: list[TrainedRow] = []
    for seed in range(max((grid.seed_count(r) for r in grid.rows), default=0)):
        if "control" in grid.rows and seed < grid.seed_count("control"):
            runs.append(TrainedRow("control", None, seed))
        for ext in grid.extensions:
            for row in grid.rows:
                if row != "control" and seed < grid.seed_count(row):
                    runs.append(TrainedRow(row, ext, seed))
    return runs


def eval_units(grid: RunGrid, model: str, rope: str | None, extension: str | None) -> list[dict]:
    """The short, RULER (and, where the profile measures it, perplexity) evaluation configs of
    ``model`` (with ``rope``) in the rows of ``extension``."""
    from longred_bench.jobs.tiny_base import build_identity

    ev = grid.evaluation
    common = {"model": model, "base": build_identity(model), "rope": rope,
              "batch_size": ev.batch_size, "device": ev.device, "seed": 0,
              "item_scores": True}  # fmt: skip
    if ev.backend != "hf":  # units of the default backend keep their earlier cache keys
        common["backend"] = ev.backend
    short = {**common, "suite": ev.short.suite, "limit": ev.short.limit,
             "max_length": ev.short.max_length}  # fmt: skip
    if ev.short.tasks is not None:
        short["tasks"] = list(ev.short.tasks)
    ruler = {**common, "suite": "ruler", "lengths": ruler_lengths_for(grid, extension),
             "samples": ev.ruler.samples}  # fmt: skip
    if ev.ruler.tasks is not None:  # RULER's 13 tasks keep their earlier cache keys
        ruler["tasks"] = list(ev.ruler.tasks)
    if ev.ruler.phrasing != "standard":  # standard units keep their earlier cache keys
        ruler["phrasing"] = ev.ruler.phrasing
    if ev.ppl.corpus is None:
        return [short, ruler]
    ppl = {**common, "suite": "ppl", "item_scores": False, "corpus": ev.ppl.corpus,
           "lengths": [max(ruler["lengths"])], "samples": ev.ppl.windows}  # fmt: skip
    ppl.pop("backend", None)  # perplexity runs the model itself, on any profile's backend
    return [short, ruler, ppl]


def eval_unit(config: dict[str, Any]) -> CachedUnit:
    """An evaluation unit of the shared evaluation cache (``runs/table3-eval/<hash>``): an
    lm-eval suite, or perplexity by position (kind ``ppl``: no lm-eval)."""
    kind = "ppl" if config.get("suite") == "ppl" else "eval"
    return CachedUnit(kind, unit_folder("table3-eval", config), config)


# Relative cost of a unit, for longest-first scheduling (measured at profile tiny: a LinearARD
# run takes about 2.5x a CPT run; an evaluation of one model about a third of a CPT run).
UNIT_COST = {"linearard": 3.0, "linearard-ft": 3.0, "linearard-lite": 0.5,
             "linearard-lite-ft": 0.5, "eval": 0.4}  # fmt: skip


def base_steps(grid: RunGrid) -> list[Step]:
    """The base model's evaluations: original RoPE, then each zero-shot extension."""
    steps = []
    for row, ext in [("original", None), *(("zero-shot", e) for e in grid.extensions)]:
        labels = {"row": row, "extension": ext, "seed": 0, "train": None}
        for unit in eval_units(grid, grid.model, ext, ext):
            label = f"eval {row} {ext or ''} {unit['suite']}"
            steps.append(Step(eval_unit(unit), " ".join(label.split()), UNIT_COST["eval"],
                              labels=labels))  # fmt: skip
    return steps


def row_steps(grid: RunGrid, run: TrainedRow) -> list[Step]:
    """One training run and the evaluations of its checkpoint (at its extension; ``control``
    at every extension of the grid)."""
    cfg = run.config(grid)
    train = train_unit(cfg)
    after = (train_unit(merge_source(run).config(grid)).folder,) if cfg.recipe == "merge" else ()
    if cfg.init:
        after = (train_unit(light_cpt_source(run).config(grid)).folder,)
    where = run.extension or "original RoPE"
    steps = [Step(train, f"train {run.row} {where} seed {run.seed}", UNIT_COST.get(run.row, 1.0),
                  after=after, relisted=cfg.recipe == "merge")]  # fmt: skip
    extra = {"long_data": cfg.long_data, "retrieval_fraction": cfg.retrieval_fraction,
             "long_len": cfg.long_len, "short_len": cfg.short_len}  # fmt: skip
    if cfg.recipe == "longrecipe":
        extra["anchors"] = list(cfg.anchors)
    for ext in [run.extension] if run.extension else grid.extensions:
        labels = {"row": run.row, "extension": ext, "seed": run.seed}
        for unit in eval_units(grid, str(train.dir / "final"), None, ext):
            steps.append(Step(
                eval_unit(unit), f"eval {run.row} {ext} seed {run.seed} {unit['suite']}",
                UNIT_COST["eval"], after=(train.folder,), labels=labels, train=train.folder,
                train_extra=extra,
            ))  # fmt: skip
    return steps


def grid_steps(grid: RunGrid) -> list[Step]:
    """Every step of a grid, in the table's order: the base model's evaluations, then each run
    with its evaluations, seed by seed."""
    steps = base_steps(grid)
    light: set[str] = set()
    for run in trained_rows(grid):
        cfg = run.config(grid)
        if cfg.init:  # a LinearARD row: its light CPT run first, once per extension and seed
            source = train_unit(light_cpt_source(run).config(grid))
            if source.folder not in light:
                light.add(source.folder)
                steps.append(Step(source, f"train cpt-light {run.extension} seed {run.seed}",
                                  UNIT_COST.get("cpt-light", 0.25)))  # fmt: skip
        steps += row_steps(grid, run)
    return steps


def grid_spec(
    name: str,
    title: str,
    rows: tuple[str, ...],
    compared: tuple[str, ...],
    build: str,
    *,
    check: Any = None,
    settings: type = GridSettings,
) -> Any:
    """The spec of a table made of one run grid: its default ``rows``, the ``compared`` ones
    (which get the profile's seeds) and its report builder (``module:function``)."""
    from longred_bench.reproduce.spec import TableSpec, lazy

    def grid(ctx: Context) -> RunGrid:
        return make_grid(ctx, rows, compared, d1=ctx.options.get("d1", "retrieval"))

    def steps(ctx: Context) -> list[Step]:
        return grid_steps(grid(ctx))

    return TableSpec(name, title, settings, steps, build=lazy(build), check=check, grid=grid)
