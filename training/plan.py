"""What a training config will do, without building anything: ``train --dry-run``."""

from __future__ import annotations

import yaml

from longred_bench.errors import UserError
from longred_bench.training.config import TrainConfig
from longred_bench.training.devices import floating_dtype
from longred_bench.training.method_groups import grouped

TOKEN_TOLERANCE = 0.05  # a step may read this much more or less than tokens_per_step


def micro_steps(cfg: TrainConfig) -> int:
    """Micro-steps (gradient accumulation) per optimizer step."""
    return max(1, cfg.tokens_per_step // cfg.micro_tokens) if cfg.micro_tokens else 1


def stream_lengths(cfg: TrainConfig, window: int) -> dict[str, int]:
    """Tokens per row of each stream for a model whose original window is ``window``."""
    return {"long": cfg.long_len, "short": cfg.short_len, "s2l": window}


def micro_rows(cfg: TrainConfig, window: int) -> dict[str, int]:
    """Rows of each stream per micro-step (all processes together): the step's tokens split by
    the mix (LinearARD: all on s2l, and on long for its CPT stage)."""
    from longred_bench.training.methods import METHODS

    method = METHODS[cfg.recipe]
    lengths = stream_lengths(cfg, window)
    mix = method.stream_mix(cfg)
    micro = micro_steps(cfg)
    rows = {
        name: max(1, round(cfg.tokens_per_step * frac / lengths[name] / micro))
        for name, frac in mix.items()
    }
    for phase in method.stream_phases(list(rows)):
        got = micro * sum(rows[n] * lengths[n] for n in phase if n in rows)
        if got and abs(got - cfg.tokens_per_step) > TOKEN_TOLERANCE * cfg.tokens_per_step:
            per = ", ".join(f"{n}: {micro * rows[n]} x {lengths[n]}" for n in phase if n in rows)
            raise UserError(
                f"tokens_per_step={cfg.tokens_per_step} cannot be split into whole rows by the mix "
                f"({per} = {got} tokens): adjust tokens_per_step, micro_tokens or the lengths"
            )
    return rows


def stream_reads(cfg: TrainConfig, window: int) -> dict[str, int]:
    """Rows each stream hands out over the whole run (all processes, all micro-steps)."""
    from longred_bench.training.methods import METHODS

    steps = METHODS[cfg.recipe].stream_steps(cfg)
    micro = micro_steps(cfg)
    return {name: r * micro * steps.get(name, 0) for name, r in micro_rows(cfg, window).items()}


def epochs_line(name: str, record: dict, rows: int, reads: int) -> str | None:
    """One line saying how many epochs stream ``name`` runs when its data gives fewer ``rows``
    than the run ``reads`` (None when it reads each row at most once). ``record``: the data's
    record (:class:`~longred_bench.training.data.StreamData`): its source, length and, where it
    has documents, how many hold at least ``length`` tokens."""
    if reads <= rows:
        return None
    length = record["length"]
    docs = record.get("long_documents")
    origin = f" (from {docs} documents of at least {length} tokens)" if docs is not None else ""
    if record.get("packed"):
        origin = f" (its documents joined end to end; {docs or 0} of them hold {length} tokens)"
    used = record.get("fallback", {}).get("used")
    source = f"{record['source']} (fallback {used})" if used else record["source"]
    return (
        f"data {name}: {source} gives {rows} rows of {length} tokens{origin}, the budget reads "
        f"{reads} rows: {reads / rows:.2f} epochs (each row seen about {reads / rows:.1f} times)"
    )


def describe_plan(cfg: TrainConfig, window: int | None = None) -> str:
    """The resolved config as YAML, then tokens per step and in total. ``window``: the model's
    original window where the caller knows it (a profile states it), else read from the model's
    config (:func:`~longred_bench.training.data_plan.describe_plan_with_data` adds the data's
    epochs)."""
    from longred_bench.training.methods import METHODS
    from longred_bench.training.model_plan import ARCHITECTURE_DEFAULTS, planning_config

    method = METHODS[cfg.recipe]
    if not method.TRAINS:
        head = yaml.safe_dump(grouped(cfg.to_dict(), cfg.recipe), sort_keys=True).rstrip()
        return f"{head}\n\n{cfg.recipe}: no training steps, no tokens (weights interpolated)"
    if cfg.recipe == "pretrain":
        window = int({**ARCHITECTURE_DEFAULTS, **cfg.architecture}["max_position_embeddings"])
    elif window is None:
        try:
            window = int(planning_config(cfg.model).max_position_embeddings)
        except UserError as exc:  # e.g. a hub model offline: the config is still worth showing
            head = yaml.safe_dump(grouped(cfg.to_dict(), cfg.recipe), sort_keys=True).rstrip()
            return (
                f"{head}\n\ntokens per step: {cfg.tokens_per_step} (as configured)\nsteps: "
                f"{cfg.steps}\nrows per stream need the model's window, which could not be "
                f"read: {exc}"
            )
    _check_run_values(cfg, window)
    lengths = stream_lengths(cfg, window)
    micro = micro_steps(cfg)
    rows = {n: r * micro for n, r in micro_rows(cfg, window).items()}
    lines = [yaml.safe_dump(grouped(cfg.to_dict(), cfg.recipe), sort_keys=True).rstrip(), ""]
    stages = method.stages(cfg)
    total, steps = 0, 0
    for i, (streams, n) in enumerate(stages, 1):
        per_step = sum(rows[s] * lengths[s] for s in streams)
        total, steps = total + per_step * n, steps + n
        read = [f"stream {s}: {rows[s]} rows x {lengths[s]} tokens per step" for s in streams]
        if len(stages) == 1:
            lines += [*read, f"tokens per step: {per_step}"]
        else:  # a stage at a time (LinearARD's long CE then distillation, LongRecipe's replay)
            lines += [f"stage {i}, {n} steps: {r.removesuffix(' per step')} ({per_step} tokens a "
                      "step)" for r in read]  # fmt: skip
    lines += [f"steps: {steps}", f"total tokens: {total}"]
    return "\n".join([*lines, *_anchor_lines(cfg)])


def _anchor_lines(cfg: TrainConfig) -> list[str]:
    """LongRecipe's measured anchors: the brief run and the measurement before the run (not in
    its totals), where its extended window can be read."""
    from longred_bench.models.loading import extended_config
    from longred_bench.training.anchors import IMPACT_WINDOWS, brief_rows
    from longred_bench.training.impactful_tokens import MEASURED
    from longred_bench.training.model_plan import planning_config

    if MEASURED not in cfg.anchors:
        return []
    try:
        target = int(extended_config(planning_config(cfg.model), cfg.rope).max_position_embeddings)
    except UserError:
        return []
    rows, steps = brief_rows(cfg, target), cfg.impact_steps
    return [f"before them, the anchors measured: a brief cpt run of {steps} steps of {rows} x "
            f"{target} tokens ({steps * rows * target} tokens, not in the total), then both "
            f"models over {IMPACT_WINDOWS} windows of {target} tokens"]  # fmt: skip


def _check_run_values(cfg: TrainConfig, window: int) -> None:
    """What the run refuses at its start, refused by the plan too (the lengths where the model's
    config can be read): a ``dtype`` torch has no floating type of, long rows out of place
    against the original and the extended window (:func:`check_lengths`)."""
    from longred_bench.models.loading import extended_config
    from longred_bench.training.model_plan import planning_config

    if cfg.dtype != "auto":
        floating_dtype(cfg.dtype)
    if cfg.recipe == "pretrain":
        return
    target = window
    if cfg.rope:
        try:
            config = planning_config(cfg.model)
        except UserError:  # a hub model offline: the run checks it once loaded
            return
        target = int(extended_config(config, cfg.rope).max_position_embeddings)
    check_lengths(cfg, target, window)


def check_lengths(cfg: TrainConfig, target: int, window: int) -> None:
    """Raise a UserError unless ``cfg``'s long rows sit as its recipe needs them against the
    model's original ``window`` and the extended ``target`` window (the student's
    ``max_position_embeddings``): a startup check, run before any model loads by the dry-run's
    plan too."""
    from longred_bench.training.methods import METHODS

    rows = METHODS[cfg.recipe].LONG_ROWS
    if rows == "beyond":
        if cfg.long_len <= window:
            raise UserError(
                f"long_len={cfg.long_len} is not above the original window ({window}): "
                "the long stream must be longer than what the model was trained on"
            )
        if cfg.long_len > target:
            raise UserError(
                f"long_len={cfg.long_len} exceeds the extended window ({target}) of "
                f"rope={cfg.rope}: raise the extension's factor or lower long_len"
            )
    elif rows == "within":
        if cfg.long_len >= target:
            raise UserError(
                f"long_len={cfg.long_len} is not below the extended window ({target}) of "
                f"rope={cfg.rope}: recipe {cfg.recipe} stretches shorter samples over that window"
            )
    elif cfg.long_len > window:
        raise UserError(
            f"long_len={cfg.long_len} exceeds the model's window ({window}) and recipe "
            f"{cfg.recipe} does not extend it"
        )
    if cfg.recipe == "longred" and cfg.mix_s2l > 0 and target < 2 * window:
        raise UserError(
            f"LongReD's skipped positions need an extended window ({target}) of at least twice "
            f"the original ({window})"
        )


def check_row_split(rows: dict[str, int], world: int) -> None:
    """Raise a UserError unless each stream's ``rows`` per micro-step (all processes together,
    :func:`~longred_bench.training.plan.micro_rows`) split evenly over ``world`` processes: a
    startup check, run before any model loads by the dry-run's plan and the memory model too."""
    for name, r in rows.items():
        if r % world:
            raise UserError(
                f"{r} rows of stream {name!r} per micro-step do not split over {world} processes: "
                "set tokens_per_step, micro_tokens or the mix so that they do"
            )
