"""The checks of a training config's values that need more than a comparison or two (the
optimizer's, LongRecipe's, snapshots', a merge's and the copy warm-up's): each raises
:class:`~longred_bench.errors.UserError` naming the first invalid value, as
:meth:`~longred_bench.training.config.TrainConfig.validate` calls them, before anything loads."""

from __future__ import annotations

from typing import Any

from longred_bench.errors import UserError


def choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    """Refuse config key ``name``'s ``value`` unless it is one of ``allowed``."""
    if value not in allowed:
        raise UserError(f"config {name}={value!r} is not one of {', '.join(allowed)}")


def check_optimizer(cfg: Any) -> None:
    """Values torch, peft or the layer choice refused only once the model had loaded (a
    traceback, a ``config.yaml`` left in the run's folder)."""
    if len(cfg.betas) != 2 or not all(0 <= b < 1 for b in cfg.betas):
        raise UserError(f"config betas must be two numbers in [0, 1) (got {list(cfg.betas)})")
    if cfg.weight_decay < 0:
        raise UserError(f"config weight_decay must be >= 0 (got {cfg.weight_decay})")
    if cfg.lora_rank < 0 or cfg.lora_alpha <= 0:
        raise UserError(f"config lora_rank must be >= 0 (0: no LoRA) and lora_alpha > 0 (got "
                        f"{cfg.lora_rank} and {cfg.lora_alpha:g})")  # fmt: skip
    if cfg.top_m < 0:
        raise UserError(f"config top_m must be >= 0 (got {cfg.top_m})")
    if cfg.heldout_every < 0 or (cfg.heldout_every and cfg.heldout_windows < 1):
        raise UserError(f"config heldout_every must be >= 0 (0: never) and heldout_windows "
                        f">= 1 where it is set (got {cfg.heldout_every} and "
                        f"{cfg.heldout_windows})")  # fmt: skip
    if cfg.sampler == "cream" and cfg.cream_sigma <= 0:
        raise UserError(f"config cream_sigma must be > 0 (got {cfg.cream_sigma:g})")


def check_longrecipe(cfg: Any) -> None:
    from longred_bench.training.impactful_tokens import ANCHORS, MEASURED

    if cfg.recipe != "longrecipe":
        if cfg.anchors or cfg.keep_other != 1.0 or cfg.replay_steps:
            raise UserError(
                f"config anchors, keep_other and replay_steps are for recipe longrecipe, "
                f"not {cfg.recipe}"
            )
        return
    if MEASURED in cfg.anchors:
        if len(cfg.anchors) > 1 or cfg.impact_steps < 1:
            raise UserError("config anchors=[measured] stands alone and needs impact_steps >= 1")
    else:
        for anchor in cfg.anchors:
            choice("anchors", anchor, (*ANCHORS, MEASURED))
    if not 0 <= cfg.keep_other <= 1 or not (cfg.anchors or cfg.keep_other == 1):
        raise UserError(
            f"config keep_other must be in [0, 1], and below 1 only with anchors (got "
            f"{cfg.keep_other} with anchors {list(cfg.anchors)})"
        )
    if cfg.replay_steps < 0 or (cfg.replay_steps and cfg.replay_lr <= 0):
        raise UserError("config replay_steps must be >= 0, and replay_lr > 0 with replay steps")


def _steps_at_lr(cfg: Any) -> int:
    """Optimizer steps the schedule runs at ``lr``: ``steps``, LinearARD's CPT stage included
    (LongRecipe's replay, after them, runs at ``replay_lr``)."""
    return cfg.steps + (cfg.cpt_steps if cfg.recipe == "linearard" else 0)


def check_warmup(cfg: Any) -> None:
    """The learning rate's warm-up ends within the steps that run at ``lr``: a longer one never
    reaches ``lr``."""
    trained = _steps_at_lr(cfg)
    if cfg.warmup_steps > trained:
        raise UserError(
            f"config warmup_steps ({cfg.warmup_steps}) exceeds the run's {trained} steps: its "
            f"learning rate would never reach lr; set warmup_steps <= {trained}"
        )


def check_snapshots(cfg: Any) -> None:
    last = _steps_at_lr(cfg) + cfg.replay_steps
    steps = cfg.snapshot_steps
    if list(steps) != sorted(set(steps)) or (steps and not 1 <= steps[0] <= steps[-1] <= last):
        raise UserError(
            f"config snapshot_steps must be increasing optimizer steps in 1..{last} (got "
            f"{list(steps)})"
        )
    if steps and cfg.lora_rank:
        raise UserError("config snapshot_steps is not supported with LoRA (lora_rank > 0)")


def check_merge(cfg: Any) -> None:
    if cfg.init is not None and (not cfg.rope or cfg.recipe not in ("linearard",)):
        raise UserError(
            "config init (a trained student checkpoint) is for recipe linearard with "
            f"rope=SPEC, not {cfg.recipe}" + ("" if cfg.rope else " without rope")
        )
    if cfg.recipe != "merge":
        if cfg.merge_with is not None:
            raise UserError(f"config merge_with is for recipe merge, not {cfg.recipe}")
        return
    if not cfg.merge_with:
        raise UserError("recipe merge needs merge_with=DIR (the trained extended model)")
    if cfg.rope is not None:
        raise UserError("recipe merge takes the RoPE of merge_with: drop rope=... from it")


def check_copy_warmup(cfg: Any) -> None:
    if cfg.copy_warmup_steps and cfg.recipe != "pretrain":
        raise UserError(
            f"config copy_warmup_steps is for recipe pretrain (a model from scratch), not "
            f"{cfg.recipe}: set it to 0"
        )
    if not cfg.copy_stages or not 1 <= cfg.copy_min_len <= min(cfg.copy_stages):
        raise UserError(
            f"config copy_stages={list(cfg.copy_stages)} needs at least one stage, each "
            f"longest sequence >= copy_min_len={cfg.copy_min_len} >= 1"
        )
    if min(cfg.copy_warmup_steps, cfg.copy_row_len, cfg.copy_batch) < 0 or not (
        0 < cfg.copy_until <= 1 and cfg.copy_eval_every >= 1 and cfg.copy_row_len >= 4
    ):
        raise UserError(
            "config copy_warmup_steps, copy_batch must be >= 0, copy_row_len >= 4, "
            "copy_eval_every >= 1 and copy_until in (0, 1]"
        )
