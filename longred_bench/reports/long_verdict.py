"""Claim (e) of Table 3, ours and the premise of claim (b): long-context CPT learns
long-context ability that the zero-shot extension lacks.

Rule: the interval over seeds and paired samples (
:func:`~longred_bench.reports.verdict_stats.seed_diff`) of ``RULER(cpt) - RULER(zero-shot)``
entirely above 0 -> reproduced; entirely below 0 -> not reproduced; otherwise undecided (the paper
gives no effect for this check); both rows' RULER below
:data:`~longred_bench.reports.verdict_rules.RULER_FLOOR` -> not comparable (the floor: neither
row has long-context ability RULER can measure). Unless it is reproduced, "similar RULER" in
(b) would compare rows that learned nothing long, so (b) is not comparable.
"""

from __future__ import annotations

from collections.abc import Sequence

from longred_bench.reports.verdict_rules import (
    ABOVE,
    NOT_COMPARABLE,
    RULER_FLOOR,
    Verdict,
    below_ruler_floor,
    floor_text,
    fmt_interval,
    judge,
)
from longred_bench.reports.verdict_stats import (
    LEVEL,
    RunScores,
    compared_means,
    no_interval_text,
    seed_diff,
    seed_spread,
    seeds_note,
    spread_text,
)

CLAIM_E = (
    "Long-context CPT learns long-context ability: RULER of `cpt` above the zero-shot "
    "extension's (the premise of (b))."
)
RULE_E = (
    "both rows below the RULER floor of {floor:g} points -> not comparable; else the "
    "{level:.0%} interval over seeds and paired samples of RULER(cpt) - "
    "RULER(zero-shot): entirely above 0 -> reproduced; entirely below 0 -> not reproduced; "
    "otherwise undecided (the paper gives no effect for this check)."
)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def verdict_cpt_learns_long(zero_shot: RunScores, cpt: Sequence[RunScores], scope: str) -> Verdict:
    """Claim (e) for one extension: the RULER of ``cpt`` (seeds, lowest first) against the
    zero-shot extension's."""
    rule = RULE_E.format(level=LEVEL, floor=RULER_FLOOR)
    paper = "none: this check is ours, the premise of the paper's comparison (b)."
    ci, n = seed_diff([zero_shot], cpt, "ruler")
    low, high = compared_means([zero_shot], cpt, "ruler")
    head = f"RULER `cpt` {_fmt(high)}{seeds_note(cpt)} vs `zero-shot` {_fmt(low)}"
    if ci is None:
        ours = f"{head}; {no_interval_text(n, 'per-sample RULER')}."
        return Verdict("e", CLAIM_E, scope, paper, ours, NOT_COMPARABLE, rule, "ours")
    ours = (
        f"{head} on the samples both scored; difference {fmt_interval(ci)} ({LEVEL:.0%} "
        f"interval over seeds and paired samples, n={n} samples)."
        f"{spread_text({'cpt': seed_spread(cpt, 'ruler')}, 'RULER')}"
    )
    if below_ruler_floor(low, high):
        ours += floor_text(low, high)
        return Verdict("e", CLAIM_E, scope, paper, ours, NOT_COMPARABLE, rule, "ours")
    return Verdict("e", CLAIM_E, scope, paper, ours, judge(ci, ABOVE), rule, "ours")
