"""LinearARD's claims, and the rules, in code, that label each one at one extension.

LinearARD (arXiv 2604.00004) reports, for LLaMA2-7B extended 4K -> 32K, that relation-KL
distillation on Q/Q, K/K and V/V self-relations recovers 98.3% of the short-text performance of
the best baselines (LongReD, CPT), is better than them on long-context benchmarks, and does so with
4.25M training tokens against their 256M (about 1/60). Each rule takes a LinearARD row and the
baseline rows (``cpt``, ``longred-c``) as :class:`~longred_bench.reports.verdict_stats.RunScores`
(every seed of a row); every interval counts the seeds of each compared row as well as the
documents all the compared runs scored (:func:`~longred_bench.reports.verdict_stats.seed_diff`).
Labels are :mod:`~longred_bench.reports.verdict_rules`' (:func:`~longred_bench.reports.
verdict_rules.judge`, :func:`~longred_bench.reports.verdict_rules.combine`):

(L1) *short-text recovery*: with ``best`` the baseline of higher mean Short Avg, the interval of
     ``Short Avg(linearard) - 0.983 Short Avg(best)``: entirely above 0 -> reproduced; entirely
     below 0 -> not reproduced; otherwise undecided. The paper's 98.3% is the bound itself, so
     it states no effect beyond it to rule out. (The baseline's per-document scores are scaled
     by 0.983, so the difference stays a difference of means of means.)
(L2) *better on long context*: per baseline ``b``, the interval of ``RULER(linearard) -
     RULER(b)`` judged above 0 as in (L1); the claim is the parts combined (any not reproduced
     -> not reproduced, else any undecided -> undecided, else reproduced). The paper's abstract
     gives no long-context number, so no effect is ruled out. A baseline whose RULER and the
     row's both lie below :data:`~longred_bench.reports.verdict_rules.RULER_FLOOR` gives a not
     comparable part (the floor).
(L3) *with about 1/60 of the tokens*: the reduced-budget row's (``linearard-lite``: 1/64 of the
     baselines' tokens) (L1) and (L2) combined the same way.

A comparison without shared per-document scores has no interval and is not comparable; so is
one where a compared trained row has a single seed (the seed premise: its interval would hold
none of that row's seed variance, as Table 10 says of a cost row of one run).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from longred_bench.reports.verdict_rules import (
    ABOVE,
    NOT_COMPARABLE,
    RULER_FLOOR,
    Verdict,
    below_ruler_floor,
    combine,
    fmt_interval,
    judge,
)
from longred_bench.reports.verdict_stats import (
    LEVEL,
    RunScores,
    compared_means,
    no_interval_text,
    seed_diff,
    seeds_note,
)

SEED_RULE = " A compared trained row of one seed -> not comparable (the seed premise)."
RECOVERY = 0.983  # LinearARD's abstract: 98.3% of the best baselines' short-text performance
BASELINES = ("cpt", "longred-c")
PAPER_L1 = (
    "LLaMA2-7B 4K -> 32K: recovers 98.3% of the short-text performance of state-of-the-art "
    "baselines (abstract)."
)
PAPER_L2 = "better than the baselines on long-context benchmarks (abstract)."
PAPER_L3 = "4.25M training tokens against 256M for LongReD and CPT, about 1/60 (abstract)."
CLAIM_L1 = "LinearARD recovers at least 98.3% of the best baseline's short-text score."
CLAIM_L2 = "LinearARD is better on long-context tasks than every baseline (CPT, LongReD-C)."
CLAIM_L3 = "LinearARD does both with about 1/60 of the baselines' training tokens."
RULE_L1 = (
    "best = the baseline of higher mean Short Avg; {level:.0%} interval over seeds and "
    "paired documents of Short Avg(row) - {recovery} x Short Avg(best): entirely above "
    "0 -> reproduced; entirely below 0 -> not reproduced; otherwise undecided. The paper's "
    "98.3% is the bound itself: no effect beyond it to rule out."
)
RULE_L2 = (
    "for each baseline: both below the RULER floor of {floor:g} points, or no paired samples, "
    "-> not comparable; else the {level:.0%} interval over seeds and paired samples "
    "of RULER(row) - RULER(baseline): entirely above 0 -> reproduced, entirely below "
    "0 -> not reproduced, otherwise undecided; the baselines' labels combined (any not "
    "reproduced -> not reproduced, else any not comparable -> not comparable, else any "
    "undecided -> undecided). The paper gives no "
    "long-context number: no effect to rule out."
)
RULE_L3 = (
    "the reduced-budget row's (1/64 of the baselines' tokens) (L1) and (L2) combined: either "
    "not reproduced -> not reproduced; else either not comparable -> not comparable; else both "
    "reproduced -> reproduced; else undecided."
)


def _scaled(run: RunScores, factor: float) -> RunScores:
    """``run`` with every per-document Short score (and its Short Avg) times ``factor``."""
    short = {c: {t: {d: v * factor for d, v in docs.items()} for t, docs in m.items()}
             for c, m in run.short.items()}  # fmt: skip
    avg = None if run.short_avg is None else run.short_avg * factor
    return replace(run, short=short, short_avg=avg)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def one_seed(*rows: Sequence[RunScores]) -> str:
    """The seed premise's failure as a sentence, naming the compared trained rows of a single
    seed, or ``""`` where every one has several."""
    single = [f"`{r[0].row}`" for r in rows if len(r) == 1]
    if not single:
        return ""
    return (f" Seed premise failed: {', '.join(single)} trained with one seed, so the interval "
            "holds none of its seed variance.")  # fmt: skip


def verdict_recovery(
    row: Sequence[RunScores], baselines: dict[str, Sequence[RunScores]], scope: str
) -> Verdict:
    """(L1) for one LinearARD row against the best of ``baselines`` (row -> its seeds)."""
    name = row[0].row
    rule = RULE_L1.format(level=LEVEL, recovery=RECOVERY) + SEED_RULE
    means = {b: compared_means(runs, row, "short")[0] for b, runs in baselines.items()}
    known = {b: m for b, m in means.items() if m is not None}
    if not known:
        ours = f"`{name}`: no baseline Short Avg to compare with."
        return Verdict("L1", CLAIM_L1, scope, PAPER_L1, ours, NOT_COMPARABLE, rule, "paper")
    best = max(known, key=lambda b: known[b])
    ci, n = seed_diff([_scaled(r, RECOVERY) for r in baselines[best]], row, "short")
    base, mine = compared_means(baselines[best], row, "short")
    head = (
        f"Short Avg `{name}` {_fmt(mine)}{seeds_note(row)} vs the best baseline `{best}` "
        f"{_fmt(base)}{seeds_note(baselines[best])}"
    )
    if ci is None or base is None or mine is None:
        ours = f"{head}; {no_interval_text(n, 'per-document')}."
        return Verdict("L1", CLAIM_L1, scope, PAPER_L1, ours, NOT_COMPARABLE, rule, "paper")
    ours = (
        f"{head}: {mine / base:.1%} of it; Short Avg({name}) - {RECOVERY} x Short Avg({best}) "
        f"{fmt_interval(ci)} ({LEVEL:.0%} interval over seeds and paired documents, n={n})."
    )
    failed = one_seed(row, baselines[best])
    label = NOT_COMPARABLE if failed else judge(ci, ABOVE)
    return Verdict("L1", CLAIM_L1, scope, PAPER_L1, ours + failed, label, rule, "paper")


def verdict_long(
    row: Sequence[RunScores], baselines: dict[str, Sequence[RunScores]], scope: str
) -> Verdict:
    """(L2) for one LinearARD row against every one of ``baselines`` (row -> its seeds)."""
    name = row[0].row
    rule = RULE_L2.format(level=LEVEL, floor=RULER_FLOOR) + SEED_RULE
    parts, labels = [], []
    for b, runs in baselines.items():
        ci, n = seed_diff(runs, row, "ruler")
        base, mine = compared_means(runs, row, "ruler")
        if ci is None:  # this baseline's part only: another may already refute the claim
            labels.append(NOT_COMPARABLE)
            parts.append(f"`{b}`: {no_interval_text(n, 'per-sample RULER')} ({NOT_COMPARABLE})")
            continue
        floor = below_ruler_floor(base, mine)
        labels.append(NOT_COMPARABLE if floor or one_seed(row, runs) else judge(ci, ABOVE))
        parts.append(
            f"RULER `{name}` {_fmt(mine)} vs `{b}` {_fmt(base)}{seeds_note(runs)}: "
            f"{fmt_interval(ci)} (n={n}, {labels[-1]}"
            + (f": both below the floor of {RULER_FLOOR:g} points)" if floor else ")")
        )
    if not parts:
        ours = f"`{name}`: no baseline to compare with."
        return Verdict("L2", CLAIM_L2, scope, PAPER_L2, ours, NOT_COMPARABLE, rule, "paper")
    ours = "; ".join(parts) + f" ({LEVEL:.0%} interval over seeds and paired samples)."
    ours += one_seed(row, *baselines.values())
    return Verdict("L2", CLAIM_L2, scope, PAPER_L2, ours, combine(labels), rule, "paper")


def verdict_fewer_tokens(recovery: Verdict, long: Verdict, scope: str, tokens: str) -> Verdict:
    """(L3) from the reduced-budget row's (L1) and (L2) verdicts; ``tokens`` says the budgets."""
    ours = f"{tokens}; (L1) {recovery.label}, (L2) {long.label} for that row."
    label = combine([recovery.label, long.label])
    return Verdict("L3", CLAIM_L3, scope, PAPER_L3, ours, label, RULE_L3, "paper")
