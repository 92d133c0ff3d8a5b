"""The LongReD claims this suite checks, and the rules, in code, that label each one.

Every verdict is ``reproduced``, ``not reproduced`` or ``not comparable at this scale``, decided
from bootstrap intervals (:mod:`longred_bench.metrics.stats`), never by eye. A row trained with
several seeds enters a comparison as the mean over its seeds, and the interval of a difference
resamples the seeds of each row as well as the (paired) documents
(:func:`~longred_bench.reports.verdict_stats.seed_diff`), so it counts retraining noise; with
one seed per row it is the paired document bootstrap. Every difference, and the ``n`` it reports,
is over the documents all the compared runs scored. Below, "paired interval" means that
interval:

(a) *Long-only CPT loses short-text ability* (Table 3), per extension: the paired 95% interval of
    ``Short Avg(cpt) - Short Avg(original)`` lies entirely below 0 -> reproduced; otherwise (it
    contains 0 or lies above it) -> not reproduced.
(b) *LongReD keeps more short-text ability than CPT at a similar RULER score* (Table 3), for
    LongReD-C and LongReD-U, per extension, against two baselines: long-only CPT (``cpt``, key
    ``b``) and the data-matched CPT on the same corpora mix as LongReD (``mix-cpt``, key
    ``b'``). With ``base`` the baseline: when both RULER averages are below :data:`RULER_FLOOR`
    points there is no long-context ability to compare -> not comparable at this scale.
    Otherwise LongReD's RULER is *similar* when the paired interval of
    ``RULER(longred) - RULER(base)`` contains 0, or the difference is within
    :data:`RULER_MARGIN` points, or within the RULER seed spread of a compared row; *at least as
    good* when that interval lies entirely above 0; *worse* otherwise (entirely below 0 and
    beyond the margin and the spread). Similar or at least as good: the paired interval of
    ``Short Avg(longred) - Short Avg(base)`` entirely above 0 -> reproduced (a method at least as
    good on both axes is credited), else not reproduced. Worse -> not comparable at this scale (a
    short-text gain could have been bought with long-context ability).
(c) *Drift falls after CPT* (Table 1), per extension: the same texts are measured before and
    after, so the interval is the paired bootstrap over texts of ``after - before`` of each
    text's drift (:func:`~longred_bench.metrics.stats.paired_bootstrap_diff_ci`): the hidden
    similarity interval entirely above 0 and the attention KL interval entirely below 0 ->
    reproduced; otherwise not reproduced. Records without per-text values (older runs) fall
    back to point values (after > before and after < before), and the verdict says so.
(d) ours, not the paper's: *CPT at the new RoPE loses more than the same training at the
    original RoPE* (the ``control`` row): the paired interval of
    ``Short Avg(cpt) - Short Avg(control)`` entirely below 0 -> reproduced (RoPE drift adds to
    the forgetting that the data shift alone causes); otherwise not reproduced.
(e) ours, the premise of (b): *long-context CPT learns long-context ability*
    (:mod:`longred_bench.reports.long_verdict`).

Seed spread: where a compared row was trained with two or more seeds, its spread is
``max - min`` over the seeds of its Short Avg (and, for (b), of its RULER average), each seed
scored on the documents all its seeds scored
(:func:`~longred_bench.reports.verdict_stats.seed_spread`). A verdict whose compared Short Avg
difference (mean over seeds) is smaller in size than the largest Short Avg spread of the rows it
compares is *not comparable at this scale*: retraining alone moves the score by more than the
effect. In (b), a RULER difference within the larger RULER spread of the two rows counts as
similar RULER, not as a difference. A comparison with no per-document scores (no interval) is
not comparable either.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from longred_bench.errors import UserError
from longred_bench.metrics.stats import (
    Interval,
    matched_keys,
    paired_bootstrap_diff_ci,
)
from longred_bench.reports.paper import TABLE1, TABLE1_MARK, TABLE3, TABLE3_MARK, Table3Row
from longred_bench.reports.verdict_stats import BOOT_SEED as BOOT_SEED
from longred_bench.reports.verdict_stats import (
    LEVEL,
    compared_means,
    mean_over_seeds,
    seed_check,
    seed_diff,
    seed_spread,
    seeds_note,
    spread_text,
)
from longred_bench.reports.verdict_stats import N_BOOT as N_BOOT
from longred_bench.reports.verdict_stats import RunScores as RunScores
from longred_bench.reports.verdict_stats import paired_diff as paired_diff

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
NOT_COMPARABLE = "not comparable at this scale"
LABELS = (REPRODUCED, NOT_REPRODUCED, NOT_COMPARABLE)
RULER_FLOOR = 5.0  # points: below this on both sides, RULER measures no long-context ability
RULER_MARGIN = 5.0  # points (0-100): RULER scores this close count as "similar" for claim (b)
# The base window of the paper's models (thousands of tokens), to map an extension factor to
# a Table 3 setting (Llama-3-8B 8K x4 = 32K).
PAPER_BASE_WINDOW_K = {"Llama-3-8B": 8, "Mistral-7B-v0.3": 32}
# Claim (b)'s baselines: row -> (claim key, name in the claim, the paper's data column).
B_BASELINES = {
    "cpt": ("b", "long-only CPT", "Long"),
    "mix-cpt": ("b'", "the data-matched CPT (`mix-cpt`: LongReD's corpora mix)", "Mix"),
}
# The same claim against Table 7's continual-learning baselines (`reproduce table7`).
T7_BASELINES = {
    "merge": ("T7m", "model merging (`merge`: half CPT's weights, half the original's)", None),
    "attention-only": ("T7p", "attention-only CPT (`attention-only`, Table 7's PET)", None),
}


@dataclass(frozen=True)
class Verdict:
    """A claim checked at one setting: the evidence on both sides, the label and its rule."""

    key: str  # "a", "b" (against cpt), "b'" (against mix-cpt), "c", "d", "e"
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
    "{method} keeps more short-text ability than {baseline} at a similar RULER score "
    "(Short Avg of `{row}` above `{base}`, RULER within {margin:g} points or higher)."
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
    "(no long-context ability to compare). Otherwise, with the {level:.0%} bootstrap interval "
    "(seeds and paired documents resampled) of RULER({row}) - RULER({base}): RULER is similar "
    "when it contains 0, or |difference| <= {margin:g} points (RULER_MARGIN), or |difference| "
    "<= the larger RULER seed spread of the two rows; at least as good when it lies entirely "
    "above 0; worse otherwise. Similar or at least as good: the interval of Short Avg({row}) - "
    "Short Avg({base}) entirely above 0 -> reproduced (at least as good on both axes is "
    "credited), otherwise not reproduced. Worse -> not comparable at this scale (a short-text "
    "gain could have been bought with long-context ability)."
)
RULE_C = (
    "{level:.0%} paired bootstrap interval over the evaluated texts (the same texts before and "
    "after) of after - before: hidden similarity interval entirely above 0 and attention KL "
    "interval entirely below 0 -> reproduced; otherwise (either interval contains 0 or lies on "
    "the other side) not reproduced."
)
RULE_C_POINT = (
    "point values (these drift records have no per-text values, so no interval): hidden "
    "similarity after > before and attention KL after < before -> reproduced; otherwise not "
    "reproduced."
)
RULE_D = (
    "{level:.0%} bootstrap interval (seeds and paired documents resampled) of Short Avg(cpt) - "
    "Short Avg(control): entirely below 0 -> reproduced; otherwise not reproduced."
)
RULE_SEED = (
    " Seed rule: a Short Avg difference smaller than the Short Avg seed spread of a compared "
    "row -> not comparable at this scale."
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


def paper_evidence_b(pe: str, factor: float, method: str, data: str = "Long") -> str:
    """Table 3's LongReD-C/U (mix data) vs CPT on ``data`` (``Long``: long-only, ``Mix``: the
    data-matched baseline), Short and RULER."""
    rows = paper_rows(pe, factor, method, "Mix")
    if not rows:
        return f"{TABLE3_MARK} no Table 3 row for {method} at {pe} x{factor:g}."
    name = "CPT" if data == "Long" else f"{data} CPT"
    parts = []
    for r in rows:
        c = _paper_twin(r, "CPT", data)
        parts.append(
            f"{_setting(r)}: Short {r.short:.2f} vs {name} {c.short:.2f} "
            f"({r.short - c.short:+.2f}), "
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


def _ruler_standing(ci: Interval, spreads: Mapping[str, float | None]) -> tuple[bool, str]:
    """Claim (b)'s RULER test: (LongReD's RULER similar or at least as good, why)."""
    diff = ci.estimate
    known = [s for s in spreads.values() if s is not None]
    spread = max(known) if known else None
    if ci.low > 0:
        return True, (
            f"RULER higher by {diff:+.2f} points, interval entirely above 0 (at least as good "
            "on both axes is credited)"
        )
    if ci.low <= 0 <= ci.high:
        return True, f"RULER similar: the interval of its difference ({diff:+.2f}) contains 0"
    if abs(diff) <= RULER_MARGIN:
        return True, f"RULER similar: |difference| {abs(diff):.2f} <= {RULER_MARGIN:g} points"
    if spread is not None and abs(diff) <= spread:
        return True, (
            f"RULER similar: |difference| {abs(diff):.2f} is within the RULER seed spread "
            f"{spread:.2f}"
        )
    beyond = f"the {RULER_MARGIN:g}-point margin" + (
        f" and the RULER seed spread {spread:.2f}" if spread is not None else ""
    )
    return False, (
        f"RULER lower by {diff:+.2f} points, interval entirely below 0 and beyond {beyond}: the "
        "short-text gain could have been bought with long-context ability"
    )


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
    low, high = compared_means(base, other, "short")
    head = (
        f"Short Avg `{other[0].row}` {_fmt(high)}{seeds_note(other)} vs `{base[0].row}` "
        f"{_fmt(low)}{seeds_note(base)}"
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
        f"{head} on the documents both scored; difference {fmt_interval(ci)} ({LEVEL:.0%} "
        f"bootstrap over seeds and paired documents, n={n} documents).{spread_text(spreads)}"
    )
    label = REPRODUCED if ci.high < 0 else NOT_REPRODUCED
    why = seed_check(ci.estimate, spreads)
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
    base: Sequence[RunScores], longred: Sequence[RunScores], scope: str, paper: str, method: str
) -> Verdict:
    """Claim (b) for one extension, one LongReD variant and one baseline (runs: seeds, lowest
    first): ``cpt`` gives the verdict keyed ``b``, ``mix-cpt`` (data-matched) ``b'``, Table 7's
    ``merge`` and ``attention-only`` (:data:`T7_BASELINES`) ``T7m`` and ``T7p``."""
    row, base_row = longred[0].row, base[0].row
    key, baseline, _ = {**B_BASELINES, **T7_BASELINES}[base_row]
    claim = CLAIM_B.format(
        method=method, baseline=baseline, row=row, base=base_row, margin=RULER_MARGIN
    )
    rule = RULE_B.format(
        level=LEVEL, row=row, base=base_row, margin=RULER_MARGIN, floor=RULER_FLOOR
    )
    spreads = {base_row: seed_spread(base), row: seed_spread(longred)}
    ruler_spreads = {base_row: seed_spread(base, "ruler"), row: seed_spread(longred, "ruler")}
    short_ci, n_short = seed_diff(base, longred, "short")
    ruler_ci, n_ruler = seed_diff(base, longred, "ruler")
    (base_short, short), (base_ruler, ruler) = (
        compared_means(base, longred, what) for what in ("short", "ruler")
    )
    head = (
        f"`{row}` Short Avg {_fmt(short)}, RULER {_fmt(ruler)}{seeds_note(longred)}; "
        f"`{base_row}` Short Avg {_fmt(base_short)}, RULER {_fmt(base_ruler)}{seeds_note(base)}"
    )
    if short_ci is None or ruler_ci is None:
        missing = "Short" if short_ci is None else "RULER"
        ours, rule = f"{head}; no per-document {missing} scores to pair.", f"{rule} No interval."
        return Verdict(key, claim, scope, paper, ours, NOT_COMPARABLE, rule)
    ours = (
        f"{head}, each on the documents every compared run scored. Short Avg difference "
        f"{fmt_interval(short_ci)} (n={n_short} documents); RULER difference "
        f"{fmt_interval(ruler_ci)} (n={n_ruler} documents); {LEVEL:.0%} bootstrap over seeds "
        "and paired documents."
        f"{spread_text(spreads)}{spread_text(ruler_spreads, 'RULER')}"
    )
    rulers = [mean_over_seeds(runs, "ruler_avg") or 0.0 for runs in (base, longred)]
    if max(rulers) < RULER_FLOOR:
        applied = f" Applied: both RULER averages are below {RULER_FLOOR:g} points."
        return Verdict(key, claim, scope, paper, ours, NOT_COMPARABLE, rule + applied)
    judged, why = _ruler_standing(ruler_ci, ruler_spreads)
    if not judged:
        return Verdict(key, claim, scope, paper, ours, NOT_COMPARABLE, f"{rule} Applied: {why}.")
    label = REPRODUCED if short_ci.low > 0 else NOT_REPRODUCED
    rule = f"{rule} Applied: {why}."
    seed_why = seed_check(short_ci.estimate, spreads)
    if seed_why is not None:
        label, rule = NOT_COMPARABLE, f"{rule}{RULE_SEED} Applied: {seed_why}."
    return Verdict(key, claim, scope, paper, ours, label, rule)


def text_values(summary: Mapping[str, Any], metric: str) -> dict[int, float] | None:
    """``{text index: value}`` of a ``drift_summary`` record's per-text ``metric``
    (``hidden_cosine`` or ``attention_kl``; :mod:`longred_bench.jobs.drift`), finite values
    only; ``None`` when the record has none (records of older runs)."""
    values = summary.get(f"text_{metric}")
    if not isinstance(values, (list, tuple)):
        return None
    out = {i: float(v) for i, v in enumerate(values) if v is not None and math.isfinite(v)}
    return out or None


def _fmt_drift_diff(ci: Interval) -> str:
    """``+0.00943 [+0.00801, +0.0109]``: a drift difference and its interval, 3 significant
    digits (attention KL differences span many orders of magnitude)."""
    return f"{ci.estimate:+.3g} [{ci.low:+.3g}, {ci.high:+.3g}]"


def _paired_texts(
    before: Mapping[str, Any], after: Mapping[str, Any], metric: str
) -> tuple[dict[int, float], dict[int, float]] | None:
    """Both sides' per-text values when they were measured on the same texts, else ``None``."""
    sides = text_values(before, metric), text_values(after, metric)
    same = all(before.get(k) == after.get(k) for k in ("texts", "seq_len", "num_texts"))
    if sides[0] is None or sides[1] is None or not same:
        return None
    return sides[0], sides[1]


def verdict_drift_falls(
    extension: str, before: Mapping[str, Any], after: Mapping[str, Any]
) -> Verdict:
    """Claim (c) for one extension from its before and after ``drift_summary`` records: the
    paired bootstrap over texts of after - before (:data:`RULE_C`), or, without per-text values
    on both sides, the point values (:data:`RULE_C_POINT`)."""
    h0, h1 = float(before["mean_hidden_cosine"]), float(after["mean_hidden_cosine"])
    k0, k1 = float(before["mean_attention_kl"]), float(after["mean_attention_kl"])
    tokens = after.get("num_tokens", before.get("num_tokens"))
    row = after.get("trained_row", "cpt")
    scope, paper = f"`{extension}`", paper_evidence_c()
    hidden = _paired_texts(before, after, "hidden_cosine")
    kl = _paired_texts(before, after, "attention_kl")
    if hidden is None or kl is None:
        ours = (
            f"hidden similarity {h0:.5f} -> {h1:.5f} ({h1 - h0:+.5f}); attention KL {k0:.4g} -> "
            f"{k1:.4g} nats ({k1 - k0:+.4g}); point values on {tokens} tokens (no per-text "
            f"values, so no interval), after `{row}`."
        )
        label = REPRODUCED if h1 > h0 and k1 < k0 else NOT_REPRODUCED
        return Verdict("c", CLAIM_C, scope, paper, ours, label, RULE_C_POINT)
    opts = dict(n_boot=N_BOOT, level=LEVEL, seed=BOOT_SEED)
    hidden_ci = paired_bootstrap_diff_ci(*hidden, **opts)
    kl_ci = paired_bootstrap_diff_ci(*kl, **opts)
    n = min(len(matched_keys(*hidden)), len(matched_keys(*kl)))
    ours = (
        f"hidden similarity {h0:.5f} -> {h1:.5f}, after - before {_fmt_drift_diff(hidden_ci)}; "
        f"attention KL {k0:.4g} -> {k1:.4g} nats, after - before {_fmt_drift_diff(kl_ci)}; "
        f"{LEVEL:.0%} paired bootstrap over n={n} texts ({tokens} tokens), after `{row}`."
    )
    label = REPRODUCED if hidden_ci.low > 0 and kl_ci.high < 0 else NOT_REPRODUCED
    return Verdict("c", CLAIM_C, scope, paper, ours, label, RULE_C.format(level=LEVEL))


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
