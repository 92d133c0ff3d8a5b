"""The LongReD claims this suite checks, and the rules, in code, that label each one.

Every verdict is ``reproduced``, ``not reproduced`` or ``not comparable at this scale``, decided
from bootstrap intervals (:mod:`longred_bench.metrics.stats`), never by eye. A row trained with
several seeds enters a comparison as the mean over its seeds, and the interval of a difference
resamples the seeds of each row as well as the (paired) documents
(:func:`seed_diff`), so it counts retraining noise; with one seed per row it is the paired
document bootstrap. Below, "paired interval" means that interval:

(a) *Long-only CPT loses short-text ability* (Table 3), per extension: the paired 95% interval of
    ``Short Avg(cpt) - Short Avg(original)`` lies entirely below 0 -> reproduced; otherwise (it
    contains 0 or lies above it) -> not reproduced.
(b) *LongReD keeps more short-text ability than CPT at a similar RULER score* (Table 3), for
    LongReD-C and LongReD-U, per extension: when both RULER averages are below
    :data:`RULER_FLOOR` points there is no long-context ability to compare -> not comparable at
    this scale; otherwise RULER is *similar* when the paired interval of
    ``RULER(longred) - RULER(cpt)`` contains 0 or the difference is within
    :data:`RULER_MARGIN` points; not similar -> not comparable at this scale (a short-text gain
    could be bought with long-context ability); similar and the paired interval of
    ``Short Avg(longred) - Short Avg(cpt)`` entirely above 0 -> reproduced; else not reproduced.
(c) *Drift falls after CPT* (Table 1), per extension: hidden similarity after > before and
    attention KL after < before -> reproduced; otherwise not reproduced. Drift records hold one
    value per layer, not per document, so this rule is on point values (the token count is
    given with them) and says so.
(d) ours, not the paper's: *CPT at the new RoPE loses more than the same training at the
    original RoPE* (the ``control`` row): the paired interval of
    ``Short Avg(cpt) - Short Avg(control)`` entirely below 0 -> reproduced (RoPE drift adds to
    the forgetting that the data shift alone causes); otherwise not reproduced.

Seed spread: where a compared row was trained with two or more seeds, its spread is
``max - min`` of its Short Avg over the seeds (``|seed0 - seed1|`` for two). A verdict whose
compared Short Avg difference (mean over seeds) is smaller in size than the largest spread of the
rows it compares is *not comparable at this scale*: retraining alone moves the score by more than
the effect. A comparison with no per-document scores (no interval) is not comparable either.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from longred_bench.errors import UserError
from longred_bench.metrics.stats import (
    Interval,
    paired_bootstrap_mean_of_means_diff_ci,
    seed_bootstrap_mean_of_means_diff_ci,
)
from longred_bench.reports.paper import TABLE1, TABLE1_MARK, TABLE3, TABLE3_MARK, Table3Row

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
NOT_COMPARABLE = "not comparable at this scale"
LABELS = (REPRODUCED, NOT_REPRODUCED, NOT_COMPARABLE)
RULER_FLOOR = 5.0  # points: below this on both sides, RULER measures no long-context ability
RULER_MARGIN = 5.0  # points (0-100): RULER scores this close count as "similar" for claim (b)
LEVEL = 0.95
N_BOOT = 2000
BOOT_SEED = 0
# The base window of the paper's models (thousands of tokens), to map an extension factor to
# a Table 3 setting (Llama-3-8B 8K x4 = 32K).
PAPER_BASE_WINDOW_K = {"Llama-3-8B": 8, "Mistral-7B-v0.3": 32}

Items = dict[Hashable, dict[Hashable, dict[Hashable, float]]]


@dataclass(frozen=True)
class RunScores:
    """One evaluated model: scores on a 0-100 scale.

    ``short`` maps category -> task -> doc_id -> score and ``ruler`` task -> length -> doc_id ->
    score (empty without per-document records); ``short_avg`` and ``ruler_avg`` are the tidy
    records' values (``None`` where not evaluated).
    """

    extension: str | None
    row: str
    seed: int
    short_avg: float | None
    ruler_avg: float | None
    short: Items = field(default_factory=dict)
    ruler: Items = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    """A claim checked at one setting: the evidence on both sides, the label and its rule."""

    key: str  # "a", "b", "c", "d"
    claim: str
    scope: str
    paper: str
    ours: str
    label: str
    rule: str
    source: str = "paper"  # "paper": the paper's claim; "ours": an extra check of this suite

    def __post_init__(self) -> None:
        if self.label not in LABELS:
            raise ValueError(f"verdict label {self.label!r} is not one of {LABELS}")


CLAIM_A = "Long-only CPT loses short-text ability (Short Avg of `cpt` below `original`)."
CLAIM_B = (
    "{method} keeps more short-text ability than long-only CPT at a similar RULER score "
    "(Short Avg of `{row}` above `cpt`, RULER within {margin:g} points)."
)
CLAIM_C = "Drift falls after CPT: hidden similarity rises and attention KL falls (Table 1)."
CLAIM_D = (
    "CPT at the new RoPE loses more short-text ability than the same training at the original "
    "RoPE (`control`): part of the loss is RoPE drift, not only the shift of the data."
)
RULE_A = (
    "{level:.0%} bootstrap interval (seeds and paired documents resampled) of Short Avg(cpt) - "
    "Short Avg(original), each the mean over its seeds: entirely below 0 -> reproduced; contains "
    "0 or above 0 -> not reproduced."
)
RULE_B = (
    "both RULER averages below {floor:g} points (RULER_FLOOR) -> not comparable at this scale "
    "(no long-context ability to keep similar); RULER similar: paired {level:.0%} interval of "
    "RULER({row}) - RULER(cpt) contains 0 or "
    "|difference| <= {margin:g} points (RULER_MARGIN); not similar -> not comparable at this "
    "scale; similar and the paired interval of Short Avg({row}) - Short Avg(cpt) entirely above "
    "0 -> reproduced; otherwise not reproduced."
)
RULE_C = (
    "point values (drift records have no per-document values, so no interval): hidden "
    "similarity after > before and attention KL after < before -> reproduced; otherwise not "
    "reproduced."
)
RULE_D = (
    "{level:.0%} bootstrap interval (seeds and paired documents resampled) of Short Avg(cpt) - "
    "Short Avg(control): entirely below 0 -> reproduced; otherwise not reproduced."
)
RULE_SEED = (
    " Seed rule: a Short Avg difference smaller than the seed spread of a compared row "
    "-> not comparable at this scale."
)


def _fmt(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def fmt_interval(ci: Interval, digits: int = 2) -> str:
    """``+1.23 [0.50, 2.01]``: a signed difference and its interval."""
    return f"{ci.estimate:+.{digits}f} [{ci.low:+.{digits}f}, {ci.high:+.{digits}f}]"


# --- paper evidence ---------------------------------------------------------------------------


def extension_setting(extension: str | None, factor: float | None = None) -> tuple[str, float]:
    """(``"ABF"``/``"PI"``/method, factor) of a RoPE spec; ``factor`` overrides the spec's.

    ABF without ``factor`` extends by :data:`longred_bench.models.rope.ABF_DEFAULT_FACTOR`.
    """
    from longred_bench.models.rope import ABF_DEFAULT_FACTOR, parse_rope_spec

    if extension is None:
        raise UserError("the original model has no extension setting")
    try:
        spec = parse_rope_spec(extension)
    except UserError:
        return extension, factor if factor is not None else math.nan
    params = dict(spec.params)
    if factor is None:
        factor = params.get("factor", ABF_DEFAULT_FACTOR if "max_len" not in params else math.nan)
    return spec.method.upper(), float(factor)


def _factor(row: Table3Row) -> float:
    return float(row.window.rstrip("K")) / PAPER_BASE_WINDOW_K[row.model]


def paper_rows(pe: str, factor: float, method: str, data: str | None) -> list[Table3Row]:
    """Table 3 rows of ``method`` (and ``data``) at the ``pe`` extension by ``factor``."""
    return [
        r
        for r in TABLE3
        if r.pe == pe
        and r.method == method
        and (data is None or r.data == data)
        and math.isclose(_factor(r), factor)
    ]


def _paper_original(row: Table3Row) -> Table3Row:
    return next(r for r in TABLE3 if r.model == row.model and r.method == "original")


def _paper_twin(row: Table3Row, method: str, data: str) -> Table3Row:
    return next(
        r
        for r in TABLE3
        if (r.model, r.window, r.pe, r.method, r.data)
        == (row.model, row.window, row.pe, method, data)
    )


def _setting(row: Table3Row) -> str:
    return f"{row.model} {row.window} {row.pe}"


def paper_evidence_a(pe: str, factor: float) -> str:
    """Table 3's long-only CPT vs original Short Avg at the matching setting(s)."""
    rows = paper_rows(pe, factor, "CPT", "Long")
    if not rows:
        return f"{TABLE3_MARK} no Table 3 row for {pe} x{factor:g}."
    parts = []
    for r in rows:
        o = _paper_original(r)
        parts.append(
            f"{_setting(r)}: Short {r.short:.2f} vs original {o.short:.2f} "
            f"({r.short - o.short:+.2f})"
        )
    return f"{TABLE3_MARK} " + "; ".join(parts) + "."


def paper_evidence_b(pe: str, factor: float, method: str) -> str:
    """Table 3's LongReD-C/U (mix data) vs long-only CPT, Short and RULER."""
    rows = paper_rows(pe, factor, method, "Mix")
    if not rows:
        return f"{TABLE3_MARK} no Table 3 row for {method} at {pe} x{factor:g}."
    parts = []
    for r in rows:
        c = _paper_twin(r, "CPT", "Long")
        parts.append(
            f"{_setting(r)}: Short {r.short:.2f} vs CPT {c.short:.2f} ({r.short - c.short:+.2f}), "
            f"RULER {r.ruler:.2f} vs {c.ruler:.2f} ({(r.ruler or 0) - (c.ruler or 0):+.2f})"
        )
    return f"{TABLE3_MARK} " + "; ".join(parts) + "."


def paper_evidence_c() -> str:
    """Table 1's before -> after values."""
    parts = [
        f"{r.model}: {r.hidden_before:.2f} -> {r.hidden_after:.2f}, KL "
        f"{r.kl_before_1e5:.2f} -> {r.kl_after_1e5:.2f} (x1e-5)"
        for r in TABLE1
    ]
    return f"{TABLE1_MARK} " + "; ".join(parts) + "."


# --- rules ------------------------------------------------------------------------------------


def _common(a: Items, b: Items) -> tuple[Items, Items, int]:
    """``a`` and ``b`` cut to the (group, member, doc) keys both have; the number of pairs."""
    out_a: Items = {}
    out_b: Items = {}
    pairs = 0
    for g in set(a) & set(b):
        for m in set(a[g]) & set(b[g]):
            keys = set(a[g][m]) & set(b[g][m])
            if keys:
                out_a.setdefault(g, {})[m] = {k: a[g][m][k] for k in keys}
                out_b.setdefault(g, {})[m] = {k: b[g][m][k] for k in keys}
                pairs += len(keys)
    return out_a, out_b, pairs


def paired_diff(a: Items, b: Items) -> tuple[Interval | None, int]:
    """Paired interval of mean-of-means(b) - mean-of-means(a) over shared items, and n pairs.

    ``None`` (and 0) when the two share no scored document.
    """
    ca, cb, n = _common(a, b)
    if n == 0:
        return None, 0
    return paired_bootstrap_mean_of_means_diff_ci(
        ca, cb, n_boot=N_BOOT, level=LEVEL, seed=BOOT_SEED
    ), n


def seed_diff(
    a: Sequence[RunScores], b: Sequence[RunScores], what: str
) -> tuple[Interval | None, int]:
    """Interval of the mean over ``b``'s seeds minus the mean over ``a``'s of the ``what``
    (``short`` or ``ruler``) mean of means, resampling seeds and documents
    (:func:`~longred_bench.metrics.stats.seed_bootstrap_mean_of_means_diff_ci`), over the
    documents every run scored; and the number of those documents. ``None`` (and 0) when the runs
    share no scored document."""
    sides = [[getattr(r, what) for r in runs] for runs in (a, b)]
    every = [items for side in sides for items in side]
    common: Items = {}
    for g in set.intersection(*(set(x) for x in every)):
        for m in set.intersection(*(set(x[g]) for x in every)):
            keys = set.intersection(*(set(x[g][m]) for x in every))
            if keys:
                common.setdefault(g, {})[m] = keys
    n = sum(len(keys) for members in common.values() for keys in members.values())
    if n == 0:
        return None, 0

    def cut(items: Items) -> Items:
        return {g: {m: {k: items[g][m][k] for k in keys} for m, keys in ms.items()}
                for g, ms in common.items()}  # fmt: skip

    ci = seed_bootstrap_mean_of_means_diff_ci(
        [cut(x) for x in sides[0]], [cut(x) for x in sides[1]],
        n_boot=N_BOOT, level=LEVEL, seed=BOOT_SEED,
    )  # fmt: skip
    return ci, n


def _mean_of(runs: Sequence[RunScores], what: str) -> float | None:
    values = [getattr(r, what) for r in runs if getattr(r, what) is not None]
    return sum(values) / len(values) if values else None


def _seeds(runs: Sequence[RunScores]) -> str:
    return "" if len(runs) < 2 else f" (mean of {len(runs)} seeds)"


def seed_spread(runs: Sequence[RunScores]) -> float | None:
    """``max - min`` of the Short Avg over the seeds of one row (``None`` with fewer than 2)."""
    values = [r.short_avg for r in runs if r.short_avg is not None]
    if len(values) < 2:
        return None
    return max(values) - min(values)


def _seed_check(diff: float, spreads: Mapping[str, float | None]) -> str | None:
    """Why the seed rule makes a verdict not comparable, or ``None`` when it does not."""
    known = {row: s for row, s in spreads.items() if s is not None}
    if not known:
        return None
    row, spread = max(known.items(), key=lambda kv: kv[1])
    if abs(diff) < spread:
        return (
            f"|Short Avg difference| {abs(diff):.2f} < seed spread of `{row}` {spread:.2f}: "
            "retraining with another seed moves the score more than the compared effect"
        )
    return None


def _spread_text(spreads: Mapping[str, float | None]) -> str:
    known = [f"`{row}` {s:.2f}" for row, s in spreads.items() if s is not None]
    return f" Seed spread (Short Avg, max - min): {', '.join(known)}." if known else ""


def _below_zero_verdict(
    key: str,
    claim: str,
    scope: str,
    paper: str,
    rule: str,
    base: Sequence[RunScores],
    other: Sequence[RunScores],
    spreads: Mapping[str, float | None],
    source: str,
) -> Verdict:
    """Claims (a) and (d): Short Avg(other) - Short Avg(base) over their seeds, interval entirely
    below 0."""
    ci, n = seed_diff(base, other, "short")
    head = (
        f"Short Avg `{other[0].row}` {_fmt(_mean_of(other, 'short_avg'))}{_seeds(other)} vs "
        f"`{base[0].row}` {_fmt(_mean_of(base, 'short_avg'))}{_seeds(base)}"
    )
    if ci is None:
        return Verdict(
            key,
            claim,
            scope,
            paper,
            head + "; no per-document scores to pair.",
            NOT_COMPARABLE,
            rule + " No interval: no shared per-document scores.",
            source,
        )
    ours = (
        f"{head}; difference {fmt_interval(ci)} ({LEVEL:.0%} bootstrap over seeds and paired "
        f"documents, n={n} documents).{_spread_text(spreads)}"
    )
    label = REPRODUCED if ci.high < 0 else NOT_REPRODUCED
    why = _seed_check(ci.estimate, spreads)
    if why is not None:
        label, rule = NOT_COMPARABLE, f"{rule}{RULE_SEED} Applied: {why}."
    return Verdict(key, claim, scope, paper, ours, label, rule, source)


def verdict_cpt_loses_short(
    original: RunScores, cpt: Sequence[RunScores], scope: str, paper: str
) -> Verdict:
    """Claim (a) for one extension: ``cpt`` (seeds, lowest first) against ``original``."""
    rule = RULE_A.format(level=LEVEL)
    spreads = {"cpt": seed_spread(cpt)}
    return _below_zero_verdict("a", CLAIM_A, scope, paper, rule, [original], cpt, spreads, "paper")


def verdict_cpt_vs_control(
    control: Sequence[RunScores], cpt: Sequence[RunScores], scope: str
) -> Verdict:
    """Claim (d) for one extension: ``cpt`` against ``control`` (seeds, lowest first)."""
    rule = RULE_D.format(level=LEVEL)
    spreads = {"cpt": seed_spread(cpt), "control": seed_spread(control)}
    paper = "none: this check is ours, not the paper's."
    return _below_zero_verdict("d", CLAIM_D, scope, paper, rule, control, cpt, spreads, "ours")


def verdict_longred_keeps_short(
    cpt: Sequence[RunScores], longred: Sequence[RunScores], scope: str, paper: str, method: str
) -> Verdict:
    """Claim (b) for one extension and one LongReD variant (runs: seeds, lowest first)."""
    row = longred[0].row
    claim = CLAIM_B.format(method=method, row=row, margin=RULER_MARGIN)
    rule = RULE_B.format(level=LEVEL, row=row, margin=RULER_MARGIN, floor=RULER_FLOOR)
    spreads = {"cpt": seed_spread(cpt), row: seed_spread(longred)}
    short_ci, n_short = seed_diff(cpt, longred, "short")
    ruler_ci, n_ruler = seed_diff(cpt, longred, "ruler")
    head = (
        f"`{row}` Short Avg {_fmt(_mean_of(longred, 'short_avg'))}, RULER "
        f"{_fmt(_mean_of(longred, 'ruler_avg'))}{_seeds(longred)}; `cpt` Short Avg "
        f"{_fmt(_mean_of(cpt, 'short_avg'))}, RULER {_fmt(_mean_of(cpt, 'ruler_avg'))}"
        f"{_seeds(cpt)}"
    )
    if short_ci is None or ruler_ci is None:
        missing = "Short" if short_ci is None else "RULER"
        return Verdict(
            "b",
            claim,
            scope,
            paper,
            f"{head}; no per-document {missing} scores to pair.",
            NOT_COMPARABLE,
            rule + f" No {missing} interval.",
        )
    ours = (
        f"{head}. Short Avg difference {fmt_interval(short_ci)} (n={n_short}); RULER "
        f"difference {fmt_interval(ruler_ci)} (n={n_ruler}); {LEVEL:.0%} bootstrap over seeds "
        "and paired documents."
        f"{_spread_text(spreads)}"
    )
    if max(_mean_of(cpt, "ruler_avg") or 0.0, _mean_of(longred, "ruler_avg") or 0.0) < RULER_FLOOR:
        applied = f" Applied: both RULER averages are below {RULER_FLOOR:g} points."
        return Verdict("b", claim, scope, paper, ours, NOT_COMPARABLE, rule + applied)
    similar = ruler_ci.low <= 0.0 <= ruler_ci.high or abs(ruler_ci.estimate) <= RULER_MARGIN
    if not similar:
        applied = (
            f" Applied: RULER differs by {ruler_ci.estimate:+.2f} points, outside the margin and "
            "with an interval excluding 0."
        )
        return Verdict("b", claim, scope, paper, ours, NOT_COMPARABLE, rule + applied)
    label = REPRODUCED if short_ci.low > 0 else NOT_REPRODUCED
    why = _seed_check(short_ci.estimate, spreads)
    if why is not None:
        label, rule = NOT_COMPARABLE, f"{rule}{RULE_SEED} Applied: {why}."
    return Verdict("b", claim, scope, paper, ours, label, rule)


def verdict_drift_falls(
    extension: str, before: Mapping[str, Any], after: Mapping[str, Any]
) -> Verdict:
    """Claim (c) for one extension from its before and after ``drift_summary`` records."""
    h0, h1 = float(before["mean_hidden_cosine"]), float(after["mean_hidden_cosine"])
    k0, k1 = float(before["mean_attention_kl"]), float(after["mean_attention_kl"])
    tokens = after.get("num_tokens", before.get("num_tokens"))
    ours = (
        f"hidden similarity {h0:.5f} -> {h1:.5f} ({h1 - h0:+.5f}); attention KL {k0:.4g} -> "
        f"{k1:.4g} nats ({k1 - k0:+.4g}); point values on {tokens} tokens, after "
        f"`{after.get('trained_row', 'cpt')}`."
    )
    label = REPRODUCED if h1 > h0 and k1 < k0 else NOT_REPRODUCED
    return Verdict("c", CLAIM_C, f"`{extension}`", paper_evidence_c(), ours, label, RULE_C)


def verdicts_markdown(verdicts: Sequence[Verdict]) -> list[str]:
    """Markdown lines: a summary table, then each verdict's evidence and rule."""
    if not verdicts:
        return ["No claim could be checked: the rows a claim compares are missing.", ""]
    lines = ["| claim | setting | verdict | source |", "|---|---|---|---|"]
    for v in verdicts:
        lines.append(
            f"| ({v.key}) {v.claim} | {v.scope} | **{v.label}** | "
            f"{'paper' if v.source == 'paper' else 'ours (not in the paper)'} |"
        )
    lines.append("")
    for v in verdicts:
        lines += [
            f"**({v.key}) {v.scope}: {v.label}.** {v.claim}",
            "",
            f"- Paper: {v.paper}",
            f"- Ours: {v.ours}",
            f"- Rule: {v.rule}",
            "",
        ]
    return lines
