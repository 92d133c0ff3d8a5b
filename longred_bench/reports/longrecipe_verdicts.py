"""LongRecipe's claims, and the rules, in code, that label each one at one extension.

LongRecipe (arXiv 2409.00509, Table 1) trains Llama-3-8B-Instruct on samples of 30% of the target
window (impactful-token selection, sentence-gap position ids, replay, merge) and reports that it
matches full-length training on long tasks with about 85% less compute, beats PoSE and RPES on
them, and keeps general ability better than they do. Each rule takes rows as lists of
:class:`~longred_bench.reports.verdict_stats.RunScores` (every seed of a row); every interval
resamples the seeds of each compared row as well as the documents (or RULER samples) all the
compared runs scored (:func:`~longred_bench.reports.verdict_stats.seed_diff`):

(R1) *matches full-length training on long tasks*: premise, claim (e) of Table 3 for the same
     runs (:func:`~longred_bench.reports.long_verdict.verdict_cpt_learns_long`: full-length
     CPT's RULER above the zero-shot extension's), else not comparable (nothing to match). The
     margin is a quarter of what CPT learned (``MATCH_FRACTION`` x its RULER gain over
     zero-shot). The interval of ``RULER(longrecipe) - RULER(cpt)`` entirely above ``-margin``
     -> reproduced; entirely below it -> not reproduced; across it -> not comparable (the
     samples cannot tell).
(R2) *beats PoSE and RPES on long tasks*: the interval of ``RULER(longrecipe) - RULER(b)`` lies
     entirely above 0 for ``b`` = ``pose`` and ``rpes`` -> reproduced; otherwise not reproduced.
(R3) *keeps short-text ability better than PoSE and RPES*: the same with Short Avg.
(R4) *about 15% of full-length training's compute*: the paper trains LongRecipe on as many
     sequences as full-length training would read, each 30% of the target window, so its
     compute is a cost per sequence. Here every row reads the same tokens, so the ratio is
     measured per token (training seconds, means over seeds, the runs' own timings; LongRecipe's
     anchor measurement run counted in) and scaled to sequences by the two sample lengths:
     at most ``2 x 0.15`` -> reproduced; otherwise not reproduced. (R1) compares at equal
     tokens, so (R1) and (R4) together are not the paper's joint claim at equal sequences.

A comparison without shared per-document scores has no interval and is not comparable.
"""

from __future__ import annotations

from collections.abc import Sequence

from longred_bench.reports.long_verdict import verdict_cpt_learns_long
from longred_bench.reports.verdict_stats import (
    LEVEL,
    RunScores,
    compared_means,
    seed_diff,
    seeds_note,
)
from longred_bench.reports.verdicts import (
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    REPRODUCED,
    Verdict,
    fmt_interval,
)

MATCH_FRACTION = 0.25  # of CPT's RULER gain over zero-shot: how far below CPT still "matches"
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
PAPER_R4 = (
    "about 85% less compute than full-length training (abstract); its runs read 96 sequences of "
    "24K a step (Table 4), so the saving is read here as one per sequence (an inference)."
)
CLAIM_R1 = "LongRecipe with about 30% of the window matches full-length training on long tasks."
CLAIM_R2 = "LongRecipe is better on long tasks than PoSE and RPES."
CLAIM_R3 = "LongRecipe keeps more short-text ability than PoSE and RPES."
CLAIM_R4 = "LongRecipe needs about 15% of full-length training's compute."
RULE_R1 = (
    "premise: claim (e), RULER(cpt) above RULER(zero-shot), else not comparable; margin = "
    "{fraction:g} x that gain; {level:.0%} bootstrap interval (seeds and paired samples resampled) "
    "of RULER(row) - RULER(cpt): entirely above -margin -> reproduced, entirely below -> not "
    "reproduced, across it -> not comparable (the samples cannot tell)."
)
RULE_VS = (
    "for b in PoSE, RPES: {level:.0%} bootstrap interval (seeds and paired {what} resampled) of "
    "{metric}(row) - {metric}(b) entirely above 0 for both -> reproduced; otherwise not reproduced."
)
RULE_R4 = (
    "training seconds per sequence, row / cpt = (seconds per token, row / cpt; means over seeds; "
    "the anchor measurement counted) x (row's sample length / cpt's): <= {limit:g} -> "
    "reproduced; otherwise not reproduced."
)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def verdict_matches_full_length(
    row: Sequence[RunScores],
    cpt: Sequence[RunScores],
    zero_shot: Sequence[RunScores],
    scope: str,
) -> Verdict:
    """(R1) for one LongRecipe row against full-length CPT, with Table 3's claim (e), CPT's gain
    over the zero-shot extension, as the premise and the scale of the margin."""
    rule = RULE_R1.format(level=LEVEL, fraction=MATCH_FRACTION)
    name = row[0].row
    premise = verdict_cpt_learns_long(zero_shot[0], cpt, scope)
    if premise.label != REPRODUCED:
        ours = f"premise (e) {premise.label}: {premise.ours} Nothing learned to match."
        return Verdict("R1", CLAIM_R1, scope, PAPER_R1, ours, NOT_COMPARABLE, rule, "paper")
    low, high = compared_means(zero_shot[:1], cpt, "ruler")
    margin = MATCH_FRACTION * ((high or 0.0) - (low or 0.0))
    ci, n = seed_diff(cpt, row, "ruler")
    base, mine = compared_means(cpt, row, "ruler")
    if ci is None:
        ours = f"`{name}` has no per-sample RULER scores to pair with `cpt`."
        return Verdict("R1", CLAIM_R1, scope, PAPER_R1, ours, NOT_COMPARABLE, rule, "paper")
    ours = (
        f"premise (e) reproduced: {premise.ours} Margin {MATCH_FRACTION:g} x that gain = "
        f"{margin:.2f}. RULER `{name}` {_fmt(mine)}{seeds_note(row)} - `cpt` {_fmt(base)}: "
        f"{fmt_interval(ci)} (n={n}; {LEVEL:.0%} bootstrap over seeds and paired samples)."
    )
    if ci.low > -margin:
        label = REPRODUCED
    elif ci.high < -margin:
        label = NOT_REPRODUCED
    else:
        label = NOT_COMPARABLE
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


def verdict_compute(ratio: float | None, scope: str, timing: str) -> Verdict:
    """(R4) from the measured cost per sequence, LongRecipe over full-length CPT; ``timing``
    says how it was measured."""
    limit = 2 * PAPER_COMPUTE
    rule = RULE_R4.format(limit=limit)
    if ratio is None:
        ours = "no training timings recorded."
        return Verdict("R4", CLAIM_R4, scope, PAPER_R4, ours, NOT_COMPARABLE, rule, "paper")
    label = REPRODUCED if ratio <= limit else NOT_REPRODUCED
    return Verdict("R4", CLAIM_R4, scope, PAPER_R4, f"{timing}: {ratio:.2f}.", label, rule, "paper")
