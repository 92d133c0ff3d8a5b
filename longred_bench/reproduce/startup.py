"""The one-line error a training unit's run would stop with at startup, told before any model
loads: the dry run lists such units, ``--emit-slurm`` writes no job for a table that has any,
and a run computes nothing then (:func:`~longred_bench.reproduce.can_run.check_startup`)."""

from __future__ import annotations

from typing import Any


def startup_error(config: dict[str, Any], profile: Any) -> str:
    """The one-line error a training run of ``config`` (a unit's config) would stop with at
    startup at ``profile`` (its ``hardware.nproc_per_node`` processes, its model's stated
    window), from the checks the run itself makes
    (:func:`~longred_bench.training.plan.check_lengths`,
    :func:`~longred_bench.training.plan.check_row_split`); ``""`` when it starts. Nothing is
    loaded."""
    from longred_bench.errors import UserError
    from longred_bench.models.rope import target_window
    from longred_bench.reproduce.plan_data import trained_config
    from longred_bench.training.plan import check_lengths, check_row_split, micro_rows

    trained = trained_config(config, profile.model.window)
    if trained is None:
        return ""
    cfg, window = trained  # a pretraining run: the model it builds, at its own RoPE
    target = target_window(cfg.rope, window) if cfg.rope and cfg.recipe != "pretrain" else window
    try:
        check_lengths(cfg, target, window)
        check_row_split(micro_rows(cfg, window), profile.hardware.nproc_per_node)
    except UserError as exc:
        return str(exc)
    return ""


def startup_errors(profile: Any, steps: list[Any]) -> list[tuple[str, str]]:
    """``(label, error)`` of each training unit of ``steps`` (plan steps) whose run would stop
    at startup at ``profile`` (:func:`startup_error`)."""
    return [(s.label, e) for s in steps
            if s.unit.kind == "train" and (e := startup_error(s.unit.config, profile))]  # fmt: skip
