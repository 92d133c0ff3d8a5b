"""LongRecipe's claims, and the rules, in code, that label each one at one extension.

LongRecipe (arXiv 2409.00509, Table 1) trains Llama-3-8B-Instruct on samples of 30% of the target
window (impactful-token selection, sentence-gap position ids, replay, merge) and reports that it
matches full-length training on long tasks with about 85% less compute, beats PoSE and RPES on
them, and keeps general ability better than they do. Each rule takes rows as lists of
:class:`~longred_bench.reports.verdict_stats.RunScores` (every seed of a row); every interval
counts the seeds of each compared row as well as the documents (or RULER samples) all the
compared runs scored (:func:`~longred_bench.reports.verdict_stats.seed_diff`). Labels are
:mod:`~longred_bench.reports.verdict_rules`' (:func:`~longred_bench.reports.verdict_rules.judge`
on one interval, :func:`~longred_bench.reports.verdict_rules.combine` over a claim's parts):

(R1) *matches full-length training on long tasks*: premise, claim (e) of Table 3 for the same
     runs (:func:`~longred_bench.reports.long_verdict.verdict_cpt_learns_long`: full-length
     CPT's RULER above the zero-shot extension's); not reproduced -> not comparable (nothing to
     match; :func:`~longred_bench.reports.verdict_rules.premise_gate`). Then non-inferiority with
     the suite's one margin of "similar long ability",
     :func:`~longred_bench.reports.verdict_rules.long_margin` (a quarter of CPT's RULER gain
     over zero-shot): the interval of ``RULER(longrecipe) - RULER(cpt)`` entirely above
     ``-margin`` -> reproduced; entirely below -> not reproduced; otherwise undecided. The claim
     is a match, not an effect: no paper effect is ruled out.
(R2) *beats PoSE and RPES on long tasks*: per baseline ``b``, the interval of
     ``RULER(longrecipe) - RULER(b)`` judged above 0, with the paper's effect over ``b``
     (:data:`PAPER_TABLE1`: the smaller of its two settings' relative RULER gains over ``b``)
     scaled to ``b``'s RULER here (:func:`~longred_bench.reports.verdict_rules.scaled_effect`):
     entirely above 0 -> reproduced; entirely below 0, or below that effect, -> not reproduced;
     otherwise undecided; both below :data:`~longred_bench.reports.verdict_rules.RULER_FLOOR`
     -> not comparable (the floor). The baselines' labels combined.
(R3) *keeps short-text ability better than PoSE and RPES*: the same with Short Avg, without a
     paper effect: the paper's short benchmarks (MMLU, GSM8K, HumanEval) are not ours and its
     gaps come mostly from HumanEval, so no size carries over.
(R4) *about 15% of full-length training's compute*: the paper trains LongRecipe on as many
     sequences as full-length training would read, each 30% of the target window, so its
     compute is a cost per sequence. Here every row reads the same tokens, so the cost is
     measured per token, ``seconds per token(longrecipe) / seconds per token(cpt)`` (the runs'
     own training seconds; LongRecipe's anchor measurement run counted in), with an interval
     over each row's runs (seeds: t over their spread) and, within a row of one run, its steps
     (:func:`~longred_bench.metrics.stats.run_step_ratio_ci`; a run whose per-step timings are
     not at hand counts as one step), then scaled to sequences by the ratio of the two sample
     lengths. Judged below ``0.15 + COMPUTE_TOLERANCE`` (0.175: "about 85% less" at the paper's
     5-point rounding): entirely below -> reproduced; entirely above -> not reproduced;
     otherwise undecided. A run of either row timed under an unrecorded machine load, or one
     above its cores, fails the timing premise Table 10 and LinearARD's cost target apply
     (:data:`~longred_bench.reports.table10_report.TIMING_RULE`): not comparable, with the
     interval shown. A row whose timings have no spread (one run, its total only) is not
     comparable. (R1) compares the rows at the tokens each trained, which its evidence states
     (:func:`tokens_note`): about equal (within :data:`SAME_TOKENS`) at ``tiny`` and ``smol``,
     where (R1) and (R4) together are not the paper's joint claim at equal sequences; at the
     ``paper*`` profiles LongRecipe reads its own paper's budget, which is not CPT's.

A comparison without shared per-document scores has no interval and is not comparable.
"""

from __future__ import annotations

from collections.abc import Sequence

from longred_bench.metrics.stats import Interval, RunSteps, run_step_ratio_ci
from longred_bench.reports.long_verdict import verdict_cpt_learns_long
from longred_bench.reports.verdict_rules import (
    ABOVE,
    BELOW,
    LONG_MARGIN_FRACTION,
    NOT_COMPARABLE,
    RULER_FLOOR,
    UNDECIDED,
    Verdict,
    below_ruler_floor,
    combine,
    fmt_interval,
    judge,
    long_margin,
    margin_resolution,
    premise_gate,
    scaled_effect,
)
from longred_bench.reports.verdict_stats import (
    BOOT_SEED,
    LEVEL,
    N_BOOT,
    RunScores,
    compared_means,
    no_interval_text,
    seed_diff,
    seeds_note,
)

SAME_TOKENS = 0.10  # token counts within 10% of each other read "about the same tokens"
PAPER_COMPUTE = 0.15  # LongRecipe's compute as a fraction of full-length training's (abstract)
COMPUTE_TOLERANCE = 0.025  # "about 85% less": a saving of 82.5% or more rounds to it
SHORT_BASELINES = ("pose", "rpes")
# LongRecipe Table 1, Llama-3-8B-Instruct (published; SEED_METHODS.md): target, method, NIAH(M),
# RULER, LongBench, MMLU, GSM8K, HumanEval.
PAPER_TABLE1 = (
    ("80K", "full-length training", 82.3, 75.7, 28.1, 62.2, 54.5, 32.7),
    ("80K", "RPES", 71.8, 71.4, 27.9, 61.4, 53.1, 15.4),
    ("80K", "PoSE", 68.8, 69.9, 27.2, 62.6, 58.2, 25.6),
    ("80K", "LongRecipe", 78.9, 74.5, 26.9, 63.0, 57.9, 29.3),
    ("128K", "full-length training", 73.2, 75.8, 26.4, 58.3, 50.9, 16.5),
    ("128K", "RPES", 72.7, 71.5, 27.3, 59.2, 46.0, 16.8),
    ("128K", "PoSE", 80.1, 75.3, 26.7, 61.9, 51.1, 21.1),
    ("128K", "LongRecipe", 82.6, 76.0, 25.5, 62.1, 54.9, 24.2),
)
PAPER_NAMES = {"pose": "PoSE", "rpes": "RPES"}
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
    "premise: claim (e), RULER(cpt) above RULER(zero-shot), reproduced, else not comparable; "
    "margin = {fraction:g} x that gain (the suite's margin of similar long ability); "
    "{level:.0%} interval over seeds and paired samples of RULER(row) - "
    "RULER(cpt): entirely above -margin -> reproduced, entirely below -> not reproduced, "
    "otherwise undecided."
)
RULE_R2 = (
    "for b in PoSE, RPES: both below the RULER floor of {floor:g} points, or no paired samples, "
    "-> not comparable; else the {level:.0%} interval over seeds and paired samples "
    "of RULER(row) - RULER(b): entirely above 0 -> reproduced; entirely below 0, or "
    "holding 0 and below the paper's effect over b (the smaller of its two settings' relative "
    "RULER gains, scaled to RULER(b) here) -> not reproduced; otherwise undecided; the two "
    "labels combined (any not reproduced -> not "
    "reproduced, else any not comparable -> not comparable, else any undecided -> undecided)."
)
RULE_R3 = (
    "for b in PoSE, RPES: no paired documents -> not comparable; else the {level:.0%} "
    "interval over seeds and paired documents of Short Avg(row) - Short Avg(b): "
    "entirely above 0 -> reproduced, entirely below 0 -> not reproduced, otherwise undecided "
    "(the paper's short benchmarks are not ours: no effect to rule out); the two labels combined "
    "(any not reproduced -> not reproduced, else any not comparable -> not comparable, else any "
    "undecided -> undecided)."
)
RULE_R4 = (
    "training seconds per sequence, row / cpt = (seconds per token, row / cpt: the runs' own "
    "training, the anchor measurement counted) x (row's sample length / cpt's), with a "
    "{level:.0%} interval over each row's runs (t) and, for a row of one run, its steps: "
    "entirely below {limit:g} (the paper's {paper:g} + {tol:g}) -> reproduced; entirely above -> "
    "not reproduced; otherwise undecided. A row of one run with its total only -> not "
    "comparable (no spread); a run of either row timed under an unrecorded machine load, or "
    "one above its cores -> not comparable (the timing premise of Table 10's costs)."
)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def same_tokens(ratio: float) -> bool:
    """Whether a token ratio reads "about the same tokens" (within :data:`SAME_TOKENS`, either
    way). The distance is compared at 1e-9, so a ratio exactly :data:`SAME_TOKENS` away (1,100
    tokens against 1,000) stays within it whatever rounding the division took."""
    return round(abs(ratio - 1.0), 9) <= SAME_TOKENS


def tokens_note(name: str, ratio: float | None) -> str:
    """What (R1)'s comparison holds equal: the tokens ``name`` trained over CPT's (means over
    seeds), said to be about the same within :data:`SAME_TOKENS`, else said not to be."""
    if ratio is None:
        return ""
    said = "about the same" if same_tokens(ratio) else "not a comparison at equal tokens"
    return f" Tokens trained, `{name}` / `cpt`: {ratio:.2f}x ({said})."


def verdict_matches_full_length(
    row: Sequence[RunScores],
    cpt: Sequence[RunScores],
    zero_shot: Sequence[RunScores],
    scope: str,
    token_ratio: float | None = None,
) -> Verdict:
    """(R1) for one LongRecipe row against full-length CPT, with Table 3's claim (e), CPT's gain
    over the zero-shot extension, as the premise and the scale of the margin; ``token_ratio``,
    the tokens the row trained over CPT's, is stated with the evidence (:func:`tokens_note`)."""
    rule = RULE_R1.format(level=LEVEL, fraction=LONG_MARGIN_FRACTION)
    name = row[0].row
    premise = verdict_cpt_learns_long(zero_shot[0], cpt, scope)
    passed, gate = premise_gate([premise])
    if not passed:
        ours = f"premise (e): {premise.ours} Nothing learned to match." + tokens_note(
            name, token_ratio
        )
        return Verdict("R1", CLAIM_R1, scope, PAPER_R1, ours, NOT_COMPARABLE, rule, "paper", gate)
    low, high = compared_means(zero_shot[:1], cpt, "ruler")
    margin = long_margin((high or 0.0) - (low or 0.0))
    ci, n = seed_diff(cpt, row, "ruler")
    base, mine = compared_means(cpt, row, "ruler")
    if ci is None:
        ours = f"`{name}` against `cpt`: {no_interval_text(n, 'per-sample RULER')}."
        return Verdict("R1", CLAIM_R1, scope, PAPER_R1, ours, NOT_COMPARABLE, rule, "paper", gate)
    ours = (
        f"premise (e): {premise.ours} Margin {LONG_MARGIN_FRACTION:g} x that gain = "
        f"{margin:.2f}. RULER `{name}` {_fmt(mine)}{seeds_note(row)} - `cpt` {_fmt(base)}: "
        f"{fmt_interval(ci)} (n={n}; {LEVEL:.0%} interval over seeds and paired samples)."
        + tokens_note(name, token_ratio)
    )
    label = judge(ci, ABOVE, bound=-margin)
    ours += margin_resolution(ci, margin) if label == UNDECIDED else ""
    return Verdict("R1", CLAIM_R1, scope, PAPER_R1, ours, label, rule, "paper", gate)


def paper_ruler_gain(baseline: str) -> tuple[float, float]:
    """LongRecipe's RULER gain over ``baseline`` (``pose`` or ``rpes``) in the paper's Table 1
    and that baseline's RULER there, ``(gain, baseline's RULER)``, at the setting of the
    smaller relative gain."""
    ruler = {(t, m): r for t, m, _, r, *_ in PAPER_TABLE1}
    name = PAPER_NAMES[baseline]
    pairs = [(ruler[(t, "LongRecipe")] - ruler[(t, name)], ruler[(t, name)])
             for t in sorted({t for t, *_ in PAPER_TABLE1})]  # fmt: skip
    return min(pairs, key=lambda p: p[0] / p[1])


def verdict_beats(
    row: Sequence[RunScores],
    baselines: dict[str, Sequence[RunScores]],
    scope: str,
    what: str,
) -> Verdict:
    """(R2) with ``what="ruler"``, (R3) with ``what="short"``: one LongRecipe row against every
    one of ``baselines`` (row -> its seeds)."""
    key, claim, paper, metric, items, rule = {
        "ruler": ("R2", CLAIM_R2, PAPER_R2, "RULER", "samples", RULE_R2),
        "short": ("R3", CLAIM_R3, PAPER_R3, "Short Avg", "documents", RULE_R3),
    }[what]
    rule = rule.format(level=LEVEL, floor=RULER_FLOOR)
    name = row[0].row
    parts, labels = [], []
    for b, runs in baselines.items():
        ci, n = seed_diff(runs, row, what)
        base, mine = compared_means(runs, row, what)
        if ci is None or base is None:  # this part only: another may already refute the claim
            labels.append(NOT_COMPARABLE)
            parts.append(f"`{b}`: {no_interval_text(n, f'per-item {metric}')} ({NOT_COMPARABLE})")
            continue
        effect = None
        if what == "ruler" and b in PAPER_NAMES:
            effect = scaled_effect(*paper_ruler_gain(b), base)
        floor = what == "ruler" and below_ruler_floor(base, mine)
        labels.append(NOT_COMPARABLE if floor else judge(ci, ABOVE, paper=effect))
        scaled = "" if effect is None else f", the paper's effect scaled here {effect:+.2f}"
        scaled += f", both below the floor of {RULER_FLOOR:g} points" if floor else ""
        parts.append(f"{metric} `{name}` {_fmt(mine)} vs `{b}` {_fmt(base)}: "
                     f"{fmt_interval(ci)} (n={n}{scaled}; {labels[-1]})")  # fmt: skip
    if not parts:
        ours = f"`{name}`: no baseline to compare with."
        return Verdict(key, claim, scope, paper, ours, NOT_COMPARABLE, rule, "paper")
    ours = "; ".join(parts) + f" ({LEVEL:.0%} interval over seeds and paired {items})."
    return Verdict(key, claim, scope, paper, ours, combine(labels), rule, "paper")


def _has_spread(runs: Sequence[RunSteps]) -> bool:
    return len(runs) >= 2 or any(len(r.values) >= 2 for r in runs)


def compute_interval(
    mine: Sequence[RunSteps], cpt: Sequence[RunSteps], length_ratio: float
) -> Interval:
    """Training seconds per sequence, ``mine`` over ``cpt``, and its interval: the ratio of
    seconds per token (:func:`~longred_bench.metrics.stats.run_step_ratio_ci`, over runs and
    steps) times ``length_ratio``, the ratio of the two sample lengths."""
    ci = run_step_ratio_ci(cpt, mine, n_boot=N_BOOT, level=LEVEL, seed=BOOT_SEED)
    return Interval(*(x * length_ratio for x in ci))


def verdict_compute(
    mine: Sequence[RunSteps],
    cpt: Sequence[RunSteps],
    length_ratio: float | None,
    scope: str,
    loud: str = "",
) -> Verdict:
    """(R4) from the per-step (or, where those are not at hand, per-run) training timings of
    LongRecipe's runs ``mine`` and full-length CPT's ``cpt`` (seconds and tokens; LongRecipe's
    anchor measurement as each run's ``fixed`` seconds) and ``length_ratio``, LongRecipe's sample
    length over CPT's. ``loud``: the rows whose runs fail the timing premise, with their loads
    (empty: every run was timed under a recorded load within its cores)."""
    limit = PAPER_COMPUTE + COMPUTE_TOLERANCE
    rule = RULE_R4.format(level=LEVEL, limit=limit, paper=PAPER_COMPUTE, tol=COMPUTE_TOLERANCE)

    def verdict(ours: str, label: str) -> Verdict:
        return Verdict("R4", CLAIM_R4, scope, PAPER_R4, ours, label, rule, "paper")

    if not mine or not cpt or not length_ratio:
        return verdict("no training timings (or sample lengths) recorded.", NOT_COMPARABLE)
    steps = f"`longrecipe` {_runs_text(mine)}, `cpt` {_runs_text(cpt)}"
    if not (_has_spread(mine) and _has_spread(cpt)):
        return verdict(f"{steps}: a row of one run without per-step timings has no spread.",
                       NOT_COMPARABLE)  # fmt: skip
    ci = compute_interval(mine, cpt, length_ratio)
    ours = (
        f"training seconds per sequence, `longrecipe` / `cpt`: {ci.estimate:.3f} "
        f"[{ci.low:.3f}, {ci.high:.3f}] ({LEVEL:.0%} interval over runs and steps; {steps}; "
        f"per token x the sample-length ratio {length_ratio:.3f})."
    )
    if loud:
        return verdict(f"{ours} Timing premise failed: {loud}.", NOT_COMPARABLE)
    return verdict(ours, judge(ci, BELOW, bound=limit))


def _runs_text(runs: Sequence[RunSteps]) -> str:
    steps = [len(r.values) for r in runs]
    totals = sum(n == 1 for n in steps)
    timed = "per-step timings" if not totals else f"{totals} of them timed as a total only"
    return f"{len(runs)} run(s), {sum(steps)} step(s) ({timed})"
