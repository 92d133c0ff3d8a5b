"""The rows a run table trains: each row's recipe and config keys (:data:`ROW_RECIPE`), the
ablation rows of LongReD-C and their model-dependent settings, and the reduced and replay budgets
of the LinearARD and LongRecipe rows (:mod:`longred_bench.reproduce.grid` builds each run's
config from them)."""

from __future__ import annotations

from typing import Any

TRAINED_ROWS = ("control", "cpt", "mix-cpt", "longred-c", "longred-u", "linearard")
ROW_RECIPE = {
    "control": ("control", {}),
    "cpt": ("cpt", {}),
    "mix-cpt": ("mix-cpt", {}),
    # LongReD Table 2's "Long+Short" (`reproduce table2`): half of the long tokens replaced by
    # text of the original window, CE on both at the extended RoPE.
    "long-short-cpt": ("mix-cpt", {"mix_long": 1.0, "mix_short": 0.0, "mix_s2l": 1.0}),
    # LongReD Table 7's continual-learning baselines (`reproduce table7`): CPT with only the
    # attention projections trainable, and half CPT's weights merged with half the original's
    # (the `cpt` run of the same extension and seed; no optimizer).
    "attention-only": ("attention-only", {}),
    "merge": ("merge", {"merge_weight": 0.5}),
    "longred-c": ("longred", {"sampler": "cream"}),
    "longred-u": ("longred", {"sampler": "uniform"}),
    "linearard": ("linearard", {}),
    # The light CPT run every LinearARD row at an extension starts from (its paper distils after
    # a lightweight CPT): CPT at a 1/LIGHT_CPT of the steps, same extension and seed.
    "cpt-light": ("cpt", {}),
    # LinearARD's own comparison (`reproduce linearard`): without its LoRA (every weight
    # trained), and at its reduced budget (LITE_STEPS, LITE_TOKENS), with and without the LoRA.
    "linearard-ft": ("linearard", {"lora_rank": 0}),
    "linearard-lite": ("linearard", {}),
    "linearard-lite-ft": ("linearard", {"lora_rank": 0}),
    # LongRecipe's comparison (`reproduce longrecipe`): RPES and PoSE on samples of the original
    # window, LongRecipe on about 30% of the target window with its anchor types measured (the
    # recipe's default) or the released code's shortcut (sentences with a digit).
    "rpes": ("rpes", {}),
    "pose": ("pose", {}),
    "longrecipe": ("longrecipe", {}),
    "longrecipe-digit": ("longrecipe", {"anchors": ["digit"]}),
}
# LongReD's ablations (`reproduce table4`, `table5`, `table6`): LongReD-C with one setting
# changed. Loss weights (Table 4) are keys; distilled layers (Table 5) and the short-distillation
# length (Table 6) follow the model's depth and window (:func:`ablation_overrides`).
ABLATION_ROWS: dict[str, dict[str, Any]] = {
    "longred-c-no-short": {"a1": 0.0, "a2": 15.0},
    "longred-c-no-s2l": {"a2": 0.0},
    "longred-c-a2-100": {"a2": 100.0},
    "longred-c-a1-100": {"a1": 100.0},
    "longred-c-a1-2": {"a1": 2.0},
    "longred-c-uniform": {},
    "longred-c-all-layers": {},
    "longred-c-last-layer": {},
    "longred-c-short-eighth": {},
    "longred-c-short-quarter": {},
    "longred-c-short-full": {},
}
ROW_RECIPE.update({row: ("longred", {"sampler": "cream", **o}) for row, o in ABLATION_ROWS.items()})
SHORT_FRACTIONS = {"longred-c-short-eighth": 8, "longred-c-short-quarter": 4,
                   "longred-c-short-full": 1}  # fmt: skip


def ablation_overrides(row: str, depth: int, window: int, top_m: int) -> dict[str, Any]:
    """The settings of an ablation row that depend on the model (``depth`` decoder layers, a
    ``window``-token window): distilled layers (1-based; ``uniform``: ``top_m`` layers evenly
    spread below the last, plus the last; ``all-layers``; ``last-layer``) and the
    short-distillation length (a fraction of the original window)."""
    if row == "longred-c-uniform":
        step = depth / (top_m + 1)
        return {"layers": sorted({max(1, round(step * (i + 1))) for i in range(top_m)} | {depth})}
    if row == "longred-c-all-layers":
        return {"layers": list(range(1, depth + 1))}
    if row == "longred-c-last-layer":
        return {"layers": [depth]}
    if row in SHORT_FRACTIONS:
        return {"short_len": window // SHORT_FRACTIONS[row]}
    return {}


# Rows whose replay stage is part of the others' budget (:func:`replay_within_budget`).
REPLAY_IN_BUDGET = ("longrecipe", "longrecipe-digit")
# The reduced budget of the `-lite` rows: a quarter of the steps with a sixteenth of the tokens
# per step, 1/64 of the others' tokens (LinearARD's paper: 4.25M tokens against 256M, 1/60).
LITE_STEPS, LITE_TOKENS = 4, 16
LIGHT_CPT = 4  # the light CPT run before LinearARD: a quarter of CPT's steps
