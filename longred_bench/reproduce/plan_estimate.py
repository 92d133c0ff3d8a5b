"""The dry run's estimate of each unit's seconds (:func:`estimate`), from what the run cache
records: a training run's from the plan's cached runs' seconds per token, else from the finished
runs of its model elsewhere in the run cache (its recipe's first); an evaluation or measurement
from the same one cached at another size or batch size (:func:`other_sizes_rate`), else from the
recorded times of its suite of the same model in the whole run cache (:func:`recorded_units`:
each evaluation folder's ``config.json`` and ``timing.json``, those of its tasks and lengths
first), else a third of a CPT run of its model (:data:`GUESS`, a rough guess); a merge is a
second. A unit's model is the one its run started from (:func:`root_model`): a trained
checkpoint counts as the model it was trained from, so a plan's units are compared with those of
its own model only (tiny-base's evaluations are not timed by tiny-random's)."""

from __future__ import annotations

import json
import math
import re
import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

MERGE_SECONDS = 1.0  # a merge interpolates two small models: about a second at tiny
COUNT_KEYS = ("samples", "limit")
"""The keys of an evaluation's config that set how many items it scores (per task and length):
its time grows with their product, other keys equal."""
SETTINGS_KEYS = ("tasks", "lengths", "seq_len", "num_texts")
"""The keys besides its size (:data:`COUNT_KEYS`) that set how much an evaluation or
measurement computes: recorded units with the same values are preferred as its basis."""
GUESS = "guess"
"""An estimate's basis when nothing of its suite and model was recorded: a third of a CPT run of
its model, measured at ``tiny`` only (at ``smoke`` an evaluation's fixed setup takes far longer
than that): a rough guess."""
OTHER_MODELS = "other models"
"""The basis of an evaluation left unknown because what the cache records of its suite, and its
finished training runs, are of other models than its own."""
TRAIN = "train:"
"""The suite of a finished training run's :class:`Recorded` (``train:cpt``): its items are the
tokens it trained on."""
_RUN = re.compile(r"(?:^|/)runs/(train-[^/]+)")


class Recorded(NamedTuple):
    """A recorded (cached and timed) evaluation or measurement: its folder (``runs/G/H``), suite,
    model (:func:`root_model`; None: not known), settings (:func:`settings_of`), items
    (:func:`count`) and seconds."""

    key: str
    suite: str
    model: str | None
    settings: str
    items: int | None
    seconds: float


def count(config: dict[str, Any]) -> int | None:
    """How many items an evaluation of ``config`` scores per task and length: the product of
    its :data:`COUNT_KEYS`; None where it states none (a whole task set)."""
    sizes = [config[k] for k in COUNT_KEYS if isinstance(config.get(k), int) and config[k] > 0]
    return math.prod(sizes) if sizes else None


def settings_of(config: dict[str, Any]) -> str:
    """What of ``config`` besides its size sets its work (:data:`SETTINGS_KEYS`), as text."""
    return json.dumps([config.get(k) for k in SETTINGS_KEYS])


def unit_model(config: dict[str, Any]) -> str:
    """The model a unit's ``config`` runs (an evaluation's ``model``, a drift measurement's
    ``original``, a PSA unit's first model); empty where it names none."""
    psa = config.get("psa") if isinstance(config.get("psa"), dict) else {}
    names = [config.get("model"), config.get("original"), *(psa.get("models") or [None])[:1]]
    return next((str(n) for n in names if n), "")


def root_model(name: str, runs: dict[str, str], memo: dict[str, str | None]) -> str | None:
    """The model ``name`` started from: itself, or for a trained checkpoint in the run cache
    (``.../runs/train-R/final``) the model its run ``R`` trained (from ``runs``, the plan's own
    runs by folder name, else its ``run.json``), followed to the first that is no checkpoint;
    None where that cannot be told (a run not in the plan nor in the cache)."""
    from longred_bench.cache import cache_dir

    for _ in range(8):  # a run trained from a run's checkpoint, and so on
        found = _RUN.search(name)
        if not found:
            return name
        run = found.group(1)
        if run not in runs and run not in memo:
            try:
                info = json.loads((cache_dir() / "runs" / run / "run.json").read_text())
                memo[run] = str(info["provenance"]["config"]["model"])
            except (OSError, ValueError, KeyError, TypeError):
                memo[run] = None
        parent = runs.get(run) or memo.get(run)
        if parent is None:
            return None
        name = parent
    return None


def recorded_units(runs: dict[str, str], memo: dict[str, str | None]) -> list[Recorded]:
    """Every evaluation and measurement the run cache records a time of (``runs/*/*/``, a
    ``timing.json`` beside a ``config.json``: two small files read per folder), and every
    finished training run (:func:`recorded_runs`)."""
    from longred_bench.cache import cache_dir
    from longred_bench.jobs.units import unit_kind, unit_seconds

    root = cache_dir() / "runs"
    out = []
    for timing in sorted(root.glob("*/*/timing.json")) if root.is_dir() else []:
        folder = timing.parent
        seconds = unit_seconds(folder)
        try:
            config = json.loads((folder / "config.json").read_text())
        except (OSError, ValueError):
            continue
        if not seconds or not isinstance(config, dict):
            continue
        suite = str(config.get("suite", unit_kind(config)))
        model = root_model(unit_model(config), runs, memo)
        key = f"runs/{folder.parent.name}/{folder.name}"
        out.append(Recorded(key, suite, model, settings_of(config), count(config), seconds))
    return out + recorded_runs(runs, memo)


def recorded_runs(runs: dict[str, str], memo: dict[str, str | None]) -> list[Recorded]:
    """Every finished training run of the run cache (``runs/train-*/`` with its ``final/``
    model), from its ``run.json``: suite ``train:<recipe>`` (:data:`TRAIN`), the model it
    started from (:func:`root_model`), the tokens it trained on as its items, and its seconds."""
    from longred_bench.cache import cache_dir

    out = []
    for info_file in sorted((cache_dir() / "runs").glob("train-*/run.json")):
        folder = info_file.parent
        try:
            info = json.loads(info_file.read_text())
            config = info["provenance"]["config"]
            tokens, seconds = int(info["tokens"]), float(info["seconds"])
            model, recipe = str(config["model"] or ""), str(config["recipe"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # damaged or unfinished: no time to go by
        if (folder / "final" / "config.json").is_file() and tokens > 0 and seconds > 0:
            key = f"runs/{folder.name}"
            out.append(Recorded(key, TRAIN + recipe, root_model(model, runs, memo), "", tokens,
                                seconds))  # fmt: skip
    return out


def _sizeless(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` without its size (:data:`COUNT_KEYS`), its batch size or its code's hash."""
    return {k: v for k, v in config.items() if k not in (*COUNT_KEYS, "batch_size", "code")}


def other_sizes_rate(unit: Any, folders: dict[Path, list]) -> float | None:
    """The median seconds per item of the evaluations cached beside ``unit`` (a
    :class:`~longred_bench.jobs.units.CachedUnit` not cached) whose stored config is its own at
    another size (:data:`COUNT_KEYS`) or batch size (its code's hash aside), with a recorded time
    (an evaluation of no stated size, a whole task set, is one item: its time); None where there
    is none. ``folders`` keeps each group folder's configs read."""
    from longred_bench.jobs.units import stored_config, unit_seconds

    items = count(unit.config)
    group = unit.dir.parent
    if group not in folders:
        folders[group] = []
        for config_file in sorted(group.glob("*/config.json")) if group.is_dir() else []:
            try:
                stored = json.loads(config_file.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(stored, dict):
                seconds = unit_seconds(config_file.parent)
                folders[group].append((_sizeless(stored), count(stored), seconds))
    want = _sizeless(stored_config(unit.config, unit.kind))
    rates = [seconds / (n or 1) for config, n, seconds in folders[group]
             if seconds and (n is None) == (items is None) and config == want]  # fmt: skip
    return statistics.median(rates) if rates else None


def _same_model(a: str | None, b: str | None) -> bool:
    """Whether models ``a`` and ``b`` are the same where both are known (None: not told)."""
    return a is None or b is None or a == b


def estimate(units: list[Any], recorded: list[Recorded] | tuple = ()) -> list[Any]:
    """``units`` (:class:`~longred_bench.reproduce.plan.PlannedUnit`) with an estimated
    ``seconds`` where none was measured, and its ``basis`` (see the module): ``other sizes``,
    ``suite``, :data:`GUESS`, :data:`OTHER_MODELS`, ``merge`` or ``tokens``. ``recorded``: the
    run cache's timed units beyond the plan's own (:func:`recorded_units`)."""
    from longred_bench.reproduce.grid import UNIT_COST

    rates: dict[str, list[float]] = {}
    for u in units:
        if u.kind == "train" and u.cached and u.seconds and u.tokens:
            rates.setdefault(u.recipe, []).append(u.seconds / u.tokens)
    every = [r for values in rates.values() for r in values]
    planned = {Path(u.key).name for u in units if u.kind == "train"}
    elsewhere = [r for r in recorded  # finished runs of the cache the plan does not hold
                 if r.suite.startswith(TRAIN) and Path(r.key).name not in planned]  # fmt: skip
    trained = [(u.recipe, u.model, u.seconds) for u in units
               if u.kind == "train" and u.recipe != "merge" and u.seconds]  # fmt: skip
    trained += [(r.suite.removeprefix(TRAIN), r.model, r.seconds) for r in elsewhere if r.model]
    own = [Recorded(u.key, u.suite, u.model, u.settings, u.items, u.seconds) for u in units
           if u.kind != "train" and u.cached and u.seconds]  # fmt: skip
    keys = {r.key for r in own}
    timed = [*own, *(r for r in recorded if r.key not in keys and not r.suite.startswith(TRAIN))]
    out = []
    for u in units:
        seconds, basis = u.seconds, ""
        if seconds is None and u.kind != "train":
            suite = [r for r in timed if r.suite == u.suite]
            seconds, basis = _eval_estimate(u, [r for r in suite if _same_model(r.model, u.model)])
            runs = [(recipe, s) for recipe, model, s in trained if _same_model(model, u.model)]
            cpt = [s for recipe, s in runs if recipe == "cpt"] or [s for _, s in runs]
            if seconds is None and cpt:
                seconds, basis = UNIT_COST["eval"] * statistics.median(cpt), GUESS
            elif seconds is None and (suite or trained):
                basis = OTHER_MODELS
        elif seconds is None and u.recipe == "merge":
            seconds, basis = MERGE_SECONDS, "merge"
        elif seconds is None:
            mine = [r for r in elsewhere if u.model is not None and r.model == u.model]
            recipe = [r.seconds / r.items for r in mine if r.suite == TRAIN + u.recipe]
            rate = rates.get(u.recipe) or recipe or every or [r.seconds / r.items for r in mine]
            if rate:
                seconds, basis = statistics.median(rate) * u.tokens, "tokens"
        out.append(replace(u, seconds=seconds, basis=basis))
    return out


def _eval_estimate(u: Any, suite: list[Recorded]) -> tuple[float | None, str]:
    """An uncached evaluation's seconds and basis: from the same one cached at other sizes,
    else from the recorded units of its ``suite`` and model (those of its settings where there
    are some; per item where each states its size)."""
    if u.per_item is not None:  # a whole task set is one item
        return u.per_item * (u.items or 1), "other sizes"
    suite = [r for r in suite if r.settings == u.settings] or suite
    if not suite:
        return None, ""
    if u.items and all(r.items for r in suite):
        return statistics.median(r.seconds / r.items for r in suite) * u.items, "suite"
    return statistics.median(r.seconds for r in suite), "suite"


def _model_text(model: str | None) -> str:
    """`` of NAME`` for a unit's model (a folder by its name), empty where it is not told."""
    if not model:
        return ""
    return f" of {Path(model).name if model.startswith(('/', '.')) else model}"


def basis_text(u: Any, basis: str) -> str:
    """What a unit's time line adds about its estimate's ``basis``: that a guess is a rough one
    and what it found nothing of; why an evaluation has none (what the cache holds is of other
    models); empty otherwise. It names what was looked at: the whole run cache."""
    what = "evaluation" if u.kind in ("eval", "ppl") else "measurement"
    model = _model_text(u.model)
    if basis == GUESS:
        return (f", a rough guess: a third of a CPT run{model}, no {u.suite} {what}{model} in "
                "the run cache")  # fmt: skip
    if basis == OTHER_MODELS:
        return f": no {u.suite} {what}{model} nor a finished training run{model} in the run cache"
    return ""


def estimate_rule(todo: list[Any], seconds: dict[str, float | None], basis: dict[str, str]) -> str:
    """The footer's sentence on how the times of ``todo`` were estimated, and how many are
    rough guesses or without an estimate for want of their model's units."""
    if not todo:
        return "Nothing to run"
    rule = ("Estimates: cached runs' seconds per token (the plan's, else its model's finished "
            "runs in the run cache); an evaluation from its own cached "
            f"at another size ({', '.join(COUNT_KEYS)}), else from the recorded times of its "
            "suite of the same model in the run cache (per item; those of its tasks and lengths "
            "first), else a third of a CPT run of its model")  # fmt: skip
    guessed = sum(1 for u in todo if basis[u.key] == GUESS)
    other = sum(1 for u in todo if basis[u.key] == OTHER_MODELS)
    if all(seconds[u.key] is None for u in todo) and not other:
        return rule + "; nothing is cached to estimate from"
    if guessed:
        rule += (
            f"; {guessed} unit(s) with nothing of their suite and model in the run cache "
            "are such guesses, rough ones (the third was measured at tiny; where an "
            "evaluation's setup outweighs its model, as at smoke, it is far too low)"
        )
    if other:
        rule += (f"; {other} unit(s) of a model the run cache holds nothing of (no evaluation "
                 "of their suite, no finished training run) have no estimate")  # fmt: skip
    return rule
