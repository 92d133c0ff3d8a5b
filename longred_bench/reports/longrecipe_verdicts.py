"""LongRecipe's claims, and the rules, in code, that label each one at one extension.

LongRecipe (arXiv 2409.00509, Table 1) trains Llama-3-8B-Instruct on samples of 30% of the target
window (impactful-token selection, sentence-gap position ids, replay, merge) and reports that it
matches full-length training on long tasks with about 85% less compute, beats PoSE and RPES on
them, and keeps general ability better than they do. Each rule takes rows as lists of
:class:`~longred_bench.reports.verdict_stats.RunScores` (every seed of a row); every interval
resamples the seeds of each compared row as well as the documents (or RULER samples) all the
compared runs scored (:func:`~longred_bench.reports.verdict_stats.seed_diff`):

(R1) *matches full-length training on long tasks*: premise, full-length CPT learned long ability
     (the interval of ``RULER(cpt) - RULER(zero-shot)`` lies entirely above 0), else not comparable
     (there is nothing to match). Then the interval of ``RULER(longrecipe) - RULER(cpt)`` lies
     entirely above ``-MATCH_MARGIN`` -> reproduced; otherwise not reproduced.
(R2) *beats PoSE and RPES on long tasks*: the interval of ``RULER(longrecipe) - RULER(b)`` lies
     entirely above 0 for ``b`` = ``pose`` and ``rpes`` -> reproduced; otherwise not reproduced.
(R3) *keeps short-text ability better than PoSE and RPES*: the same with Short Avg.
(R4) *about 15% of full-length training's compute*: the ratio of training seconds per token,
     LongRecipe over CPT (means over seeds, the runs' own timings), at most ``2 x 0.15`` ->
     reproduced. Otherwise: where the attention scores are less than half of a full-length
     training token's FLOPs (:func:`attention_flop_share`), the saving the paper measures, which
     comes from attention at long windows, cannot show at this scale -> not comparable; else not
     reproduced.

A comparison without shared per-document scores has no interval and is not comparable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from longred_bench.reports.verdict_stats import LEVEL, RunScores, compared_means, seed_diff
from longred_bench.reports.verdicts import (
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    REPRODUCED,
    Verdict,
    fmt_interval,
)

MATCH_MARGIN = 5.0  # RULER points LongRecipe may stay below full-length training and "match" it
PAPER_COMPUTE = 0.15  # LongRecipe's compute as a fraction of full-length training's (abstract)
SHORT_BASELINES = ("pose", "rpes")
PAPER_R1 = (
    "Llama-3-8B-Instruct 8K -> 80K: RULER 74.5 (LongRecipe, 24K samples) vs 75.7 (full-length "
    "training); 128K: 76.0 vs 75.8 (Table 1)."
)
PAPER_R2 = "80K: RULER 74.5 vs PoSE 69.9, RPES 71.4; 128K: 76.0 vs 75.3, 71.5 (Table 1)."
PAPER_R3 = (
    "80K: MMLU 63.0 vs PoSE 62.6, RPES 61.4; GSM8K 57.9 vs 58.2, 53.1; HumanEval 29.3 vs 25.6, "
    "15.4 (Table 1): better on average."
)
PAPER_R4 = "about 85% less compute than full-length training (abstract)."
CLAIM_R1 = "LongRecipe with about 30% of the window matches full-length training on long tasks."
CLAIM_R2 = "LongRecipe is better on long tasks than PoSE and RPES."
CLAIM_R3 = "LongRecipe keeps more short-text ability than PoSE and RPES."
CLAIM_R4 = "LongRecipe needs about 15% of full-length training's compute."
RULE_R1 = (
    "premise: {level:.0%} bootstrap interval (seeds and paired samples resampled) of RULER(cpt) - "
    "RULER(zero-shot) entirely above 0, else not comparable; then the interval of RULER(row) - "
    "RULER(cpt) entirely above -{margin:g} -> reproduced; otherwise not reproduced."
)
RULE_VS = (
    "for b in PoSE, RPES: {level:.0%} bootstrap interval (seeds and paired {what} resampled) of "
    "{metric}(row) - {metric}(b) entirely above 0 for both -> reproduced; otherwise not reproduced."
)
RULE_R4 = (
    "seconds per training token, row / cpt (means over seeds) <= {limit:g} -> reproduced; "
    "otherwise, attention scores under half of a full-length token's FLOPs -> not comparable at "
    "this scale; otherwise not reproduced."
)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def verdict_matches_full_length(
    row: Sequence[RunScores],
    cpt: Sequence[RunScores],
    zero_shot: Sequence[RunScores],
    scope: str,
) -> Verdict:
    """(R1) for one LongRecipe row against full-length CPT, with CPT's gain over zero-shot as the
    premise."""
    rule = RULE_R1.format(level=LEVEL, margin=MATCH_MARGIN)
    name = row[0].row
    learned, n0 = seed_diff(zero_shot, cpt, "ruler")
    z, c = compared_means(zero_shot, cpt, "ruler")
    if learned is None:
        ours = "no per-sample RULER scores to pair CPT with the zero-shot extension."
        return Verdict("R1", CLAIM_R1, scope, PAPER_R1, ours, NOT_COMPARABLE, rule, "paper")
    premise = f"RULER `cpt` {_fmt(c)} vs zero-shot {_fmt(z)}: {fmt_interval(learned)} (n={n0})"
    if learned.low <= 0:
        ours = premise + ": full-length training learned no long ability to match."
        return Verdict("R1", CLAIM_R1, scope, PAPER_R1, ours, NOT_COMPARABLE, rule, "paper")
    ci, n = seed_diff(cpt, row, "ruler")
    base, mine = compared_means(cpt, row, "ruler")
    if ci is None:
        ours = premise + f"; `{name}` has no per-sample RULER scores to pair with `cpt`."
        return Verdict("R1", CLAIM_R1, scope, PAPER_R1, ours, NOT_COMPARABLE, rule, "paper")
    ours = (
        f"{premise}; RULER `{name}` {_fmt(mine)} - `cpt` {_fmt(base)}: {fmt_interval(ci)} "
        f"(n={n}; {LEVEL:.0%} bootstrap over seeds and paired samples)."
    )
    label = REPRODUCED if ci.low > -MATCH_MARGIN else NOT_REPRODUCED
    return Verdict("R1", CLAIM_R1, scope, PAPER_R1, ours, label, rule, "paper")


def verdict_beats(
    row: Sequence[RunScores],
    baselines: dict[str, Sequence[RunScores]],
    scope: str,
    what: str,
) -> Verdict:
    """(R2) with ``what="ruler"``, (R3) with ``what="short"``: one LongRecipe row against every
    one of ``baselines`` (row -> its seeds)."""
    key, claim, paper, metric, items = {
        "ruler": ("R2", CLAIM_R2, PAPER_R2, "RULER", "samples"),
        "short": ("R3", CLAIM_R3, PAPER_R3, "Short Avg", "documents"),
    }[what]
    rule = RULE_VS.format(level=LEVEL, what=items, metric=metric)
    name = row[0].row
    parts, above = [], True
    for b, runs in baselines.items():
        ci, n = seed_diff(runs, row, what)
        base, mine = compared_means(runs, row, what)
        if ci is None:
            ours = f"`{name}` vs `{b}`: no per-item {metric} scores to pair."
            return Verdict(key, claim, scope, paper, ours, NOT_COMPARABLE, rule, "paper")
        parts.append(f"{metric} `{name}` {_fmt(mine)} vs `{b}` {_fmt(base)}: "
                     f"{fmt_interval(ci)} (n={n})")  # fmt: skip
        above = above and ci.low > 0
    ours = "; ".join(parts) + f" ({LEVEL:.0%} bootstrap over seeds and paired {items})."
    label = REPRODUCED if above and parts else NOT_REPRODUCED
    return Verdict(key, claim, scope, paper, ours, label, rule, "paper")


def attention_flop_share(config: Any, seq_len: int) -> float:
    """Share of the attention scores (``Q K^T`` and the weighted sum of ``V``, causal: half the
    pairs) in the forward FLOPs per token of a Llama-architecture ``config`` at ``seq_len``
    tokens; the rest is the projections, the MLP and the vocabulary projection (multiply-adds
    counted once each)."""
    hidden = int(config.hidden_size)
    layers = int(config.num_hidden_layers)
    heads = int(config.num_attention_heads)
    kv_heads = int(getattr(config, "num_key_value_heads", None) or heads)
    head_dim = int(getattr(config, "head_dim", None) or hidden // heads)
    ffn = int(config.intermediate_size)
    vocab = int(config.vocab_size)
    projections = hidden * head_dim * (2 * heads + 2 * kv_heads) + 3 * hidden * ffn
    scores = 2 * heads * head_dim * seq_len / 2
    total = layers * (projections + scores) + hidden * vocab
    return layers * scores / total


def verdict_compute(
    ratio: float | None, attention_share: float | None, scope: str, timing: str
) -> Verdict:
    """(R4) from the measured seconds-per-token ratio (LongRecipe / CPT) and the attention share
    of a full-length training token's FLOPs; ``timing`` says what was measured."""
    limit = 2 * PAPER_COMPUTE
    rule = RULE_R4.format(limit=limit)
    if ratio is None:
        ours = "no training timings recorded."
        return Verdict("R4", CLAIM_R4, scope, PAPER_R4, ours, NOT_COMPARABLE, rule, "paper")
    share = "" if attention_share is None else (
        f"; attention scores are {attention_share:.0%} of a full-length token's FLOPs"
    )  # fmt: skip
    ours = f"{timing}: {ratio:.2f}x CPT per token{share}."
    if ratio <= limit:
        label = REPRODUCED
    elif attention_share is not None and attention_share < 0.5:
        label = NOT_COMPARABLE
    else:
        label = NOT_REPRODUCED
    return Verdict("R4", CLAIM_R4, scope, PAPER_R4, ours, label, rule, "paper")
