"""The LongReD claims this suite checks, and the rules, in code, that label each one.

Every verdict uses the vocabulary of :mod:`longred_bench.reports.verdict_rules` (reproduced, not
reproduced, undecided, not comparable), decided from intervals
(:mod:`longred_bench.metrics.stats`), never by eye. A row trained with several seeds enters a
comparison as the mean over its seeds, and the interval of a difference counts the seeds of
each row (t over their spread) as well as the (paired) documents
(:func:`~longred_bench.reports.verdict_stats.seed_diff`): seed variance enters there, once. Every
difference, and the ``n`` it reports, is over the documents all the compared runs scored. Below,
"the interval" means that interval, and "the paper's effect" the paper's change at the matching
Table 3 setting scaled to this suite's Short Avg: for (a) the same relative change
(:func:`~longred_bench.reports.verdict_rules.scaled_effect`), for (b) the same fraction of the
baseline's loss against the original recovered
(:func:`~longred_bench.reports.verdict_rules.recovered_effect`; none where the baseline lost
nothing here):

(a) *Long-only CPT loses short-text ability* (Table 3), per extension: the interval of
    ``Short Avg(cpt) - Short Avg(original)`` entirely below 0 -> reproduced; entirely above 0,
    or holding 0 and above the paper's effect (it rules out a loss as large as the paper's) -> not
    reproduced; otherwise undecided.
(b) *LongReD keeps more short-text ability than CPT at a similar RULER score* (Table 3), for
    LongReD-C and LongReD-U, per extension, against long-only CPT (``cpt``, key ``b``), the
    data-matched CPT (``mix-cpt``, ``b'``) and Table 7's baselines. Premises: (a) and (e) at the
    extension reproduced, else not comparable (without a short-text loss there is nothing to
    keep; without a long-context gain there is no RULER to match). Long part, non-inferiority:
    with ``margin`` = :data:`~longred_bench.reports.verdict_rules.LONG_MARGIN_FRACTION` x
    (RULER(cpt) - RULER(zero-shot)), the interval of ``RULER(longred) - RULER(base)`` entirely
    above ``-margin`` -> reproduced, entirely below -> not reproduced, else undecided; both
    rows' RULER below :data:`~longred_bench.reports.verdict_rules.RULER_FLOOR` -> not
    comparable (the floor). Short part: the interval of ``Short Avg(longred) -
    Short Avg(base)`` entirely above 0 -> reproduced; entirely below 0 or below the paper's
    effect -> not reproduced; else undecided.
    The claim: not reproduced if a part is, else not comparable if a part is, else undecided
    if a part is, else reproduced.
(c) *Drift falls after CPT* (Table 1): :mod:`longred_bench.reports.drift_verdicts`.
(d) ours, not the paper's: *CPT at the new RoPE loses more than the same training at the
    original RoPE* (the ``control`` row): the interval of ``Short Avg(cpt) -
    Short Avg(control)`` entirely below 0 -> reproduced; entirely above 0 -> not reproduced;
    otherwise undecided (the paper gives no effect for it).
(e) ours, the premise of (b): *long-context CPT learns long-context ability*
    (:mod:`longred_bench.reports.long_verdict`).

A comparison with no per-document scores to pair, or with one seed a side and one document a
task (nothing to resample), has no interval and is not comparable.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from longred_bench.errors import UserError
from longred_bench.reports.drift_verdicts import text_values as text_values
from longred_bench.reports.paper import TABLE3, TABLE3_MARK, Table3Row
from longred_bench.reports.verdict_rules import (
    ABOVE,
    BELOW,
    LONG_MARGIN_FRACTION,
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    REPRODUCED,
    UNDECIDED,
    Verdict,
    below_ruler_floor,
    combine,
    floor_text,
    fmt_interval,
    judge,
    long_margin,
    margin_resolution,
    premise_gate,
    recovered_effect,
    recovered_text,
)
from longred_bench.reports.verdict_rules import RULER_FLOOR as RULER_FLOOR
from longred_bench.reports.verdict_rules import verdicts_markdown as verdicts_markdown
from longred_bench.reports.verdict_stats import BOOT_SEED as BOOT_SEED
from longred_bench.reports.verdict_stats import (
    LEVEL,
    compared_means,
    no_interval_text,
    seed_diff,
    seed_spread,
    seeds_note,
    spread_text,
)
from longred_bench.reports.verdict_stats import N_BOOT as N_BOOT
from longred_bench.reports.verdict_stats import RunScores as RunScores
from longred_bench.reports.verdict_stats import paired_diff as paired_diff

__all__ = [
    "LABELS",
    "NOT_COMPARABLE",
    "NOT_REPRODUCED",
    "REPRODUCED",
    "UNDECIDED",
    "Verdict",
    "fmt_interval",
]
LABELS = (REPRODUCED, NOT_REPRODUCED, UNDECIDED, NOT_COMPARABLE)
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

CLAIM_A = "Long-only CPT loses short-text ability (Short Avg of `cpt` below `original`)."
CLAIM_B = (
    "{method} keeps more short-text ability than {baseline} at a similar RULER score "
    "(Short Avg of `{row}` above `{base}`, RULER not worse by more than a quarter of CPT's "
    "RULER gain)."
)
CLAIM_D = (
    "CPT at the new RoPE loses more short-text ability than the same data trained at the "
    "original RoPE and window (`control`): part of the loss comes with the extension (its RoPE "
    "and longer training windows), not only with the shift of the data."
)
RULE_A = (
    "{level:.0%} interval over seeds and paired documents of Short Avg(cpt) - "
    "Short Avg(original), each the mean over its seeds: entirely below 0 -> reproduced; entirely "
    "above 0, or holding 0 and above the paper's effect scaled to this Short Avg (the paper's "
    "relative change, the mean over its matching Table 3 settings, x the original's Short Avg) "
    "-> not reproduced; otherwise undecided."
)
RULE_B = (
    "premises (a) and (e) at this extension reproduced, else not comparable. Long part "
    "(non-inferiority): both rows' RULER below the floor of {floor:g} points -> not comparable; "
    "else, with margin = {fraction:g} x (RULER(cpt) - RULER(zero-shot)), the {level:.0%} "
    "interval over seeds and paired samples of RULER({row}) - RULER({base}) "
    "entirely above -margin -> reproduced, entirely below -> not reproduced, else undecided. "
    "Short part: the interval of Short Avg({row}) - Short Avg({base}) entirely above "
    "0 -> reproduced; entirely below 0, or holding 0 and below the paper's effect scaled to this "
    "Short Avg (the fraction of the baseline's loss against the original that the paper's "
    "method recovers in its Table 3, x the baseline's loss here; none where the baseline lost "
    "nothing here, or for Table 7's baselines, which the paper's Table 3 lacks) -> not "
    "reproduced; else undecided. A part without an interval (nothing to resample) is not "
    "comparable. The claim: not "
    "reproduced if a part is, else not comparable if a part is, else undecided if a part is, "
    "else reproduced."
)
RULE_D = (
    "{level:.0%} interval over seeds and paired documents of Short Avg(cpt) - "
    "Short Avg(control): entirely below 0 -> reproduced; entirely above 0 -> not reproduced; "
    "otherwise undecided (the paper gives no effect for this check)."
)


def _fmt(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.{digits}f}"


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


def setting_name(pe: str, factor: float) -> str:
    """``"PI, window x2"``: the extension's method and how many times the original window it
    gives (the factor Table 3's rows are matched by; an ABF spec's base is in its name)."""
    return f"{pe}, window x{factor:g}"


def extension_scope(extension: str, pe: str, factor: float) -> str:
    """A verdict's scope: ``"`pi:factor=2` (PI, window x2)"``."""
    return f"`{extension}` ({setting_name(pe, factor)})"


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


def table3_ran(pe: str, factor: float, method: str = "CPT", data: str | None = "Long") -> bool:
    """Whether the paper's Table 3 has a row of ``method`` on ``data`` at this setting."""
    return bool(paper_rows(pe, factor, method, data))


def longred_ran(pe: str, factor: float) -> bool:
    """Whether this is the setting of the paper's Tables 2 and 4-7 and Figure 3: ABF to a window
    4 times the original's (Llama-3-8B from 8K to 32K)."""
    return pe == "ABF" and math.isclose(factor, 4.0)


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
        return f"{TABLE3_MARK} no Table 3 row for {setting_name(pe, factor)}."
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
        return f"{TABLE3_MARK} no Table 3 row for {method} at {setting_name(pe, factor)}."
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


def paper_relative_a(pe: str, factor: float) -> float | None:
    """The paper's relative Short Avg change of long-only CPT against the original at the
    matching Table 3 setting(s) (mean over them), or ``None`` where it has none."""
    rows = paper_rows(pe, factor, "CPT", "Long")
    changes = [(r.short - o.short) / o.short for r in rows for o in [_paper_original(r)]]
    return sum(changes) / len(changes) if changes else None


def paper_recovered_b(pe: str, factor: float, method: str, data: str | None) -> float | None:
    """The fraction of the CPT-on-``data`` row's Short Avg loss against the original that
    ``method`` recovers in the paper, ``(method - CPT) / (original - CPT)``, mean over the
    matching setting(s); ``None`` where there are none, ``data`` is ``None`` or the paper's CPT
    lost nothing."""
    if data is None:
        return None
    rows = paper_rows(pe, factor, method, "Mix")
    fractions = []
    for r in rows:
        c, o = _paper_twin(r, "CPT", data), _paper_original(r)
        if o.short > c.short:
            fractions.append((r.short - c.short) / (o.short - c.short))
    return sum(fractions) / len(fractions) if fractions else None


# --- rules ------------------------------------------------------------------------------------


def _no_interval(key: str, claim: str, scope: str, paper: str, head: str, rule: str, n: int,
                 source: str = "paper", what: str = "Short") -> Verdict:  # fmt: skip
    ours = f"{head}; {no_interval_text(n, f'per-document {what}')}."
    return Verdict(key, claim, scope, paper, ours, NOT_COMPARABLE, rule + " No interval.", source)


def _short_below(
    key: str,
    claim: str,
    scope: str,
    paper: str,
    rule: str,
    base: Sequence[RunScores],
    other: Sequence[RunScores],
    source: str,
    relative: float | None,
) -> Verdict:
    """Claims (a) and (d): Short Avg(other) - Short Avg(base) over their seeds, below 0."""
    ci, n = seed_diff(base, other, "short")
    low, high = compared_means(base, other, "short")
    head = (
        f"Short Avg `{other[0].row}` {_fmt(high)}{seeds_note(other)} vs `{base[0].row}` "
        f"{_fmt(low)}{seeds_note(base)}"
    )
    if ci is None:
        return _no_interval(key, claim, scope, paper, head, rule, n, source)
    spreads = {r[0].row: seed_spread(r) for r in (base, other) if len(r) > 1}
    effect = None if relative is None or low is None else relative * low
    scaled = "" if effect is None else f" The paper's effect, scaled: {effect:+.2f}."
    ours = (
        f"{head} on the documents both scored; difference {fmt_interval(ci)} ({LEVEL:.0%} "
        f"interval over seeds and paired documents, n={n} documents).{scaled}"
        f"{spread_text(spreads)}"
    )
    label = judge(ci, BELOW, paper=effect)
    return Verdict(key, claim, scope, paper, ours, label, rule, source)


def verdict_cpt_loses_short(
    original: RunScores,
    cpt: Sequence[RunScores],
    scope: str,
    paper: str,
    relative: float | None = None,
) -> Verdict:
    """Claim (a) for one extension: ``cpt`` (seeds, lowest first) against ``original``;
    ``relative`` is the paper's relative change at the setting (:func:`paper_relative_a`)."""
    rule = RULE_A.format(level=LEVEL)
    return _short_below("a", CLAIM_A, scope, paper, rule, [original], cpt, "paper", relative)


def verdict_cpt_vs_control(
    control: Sequence[RunScores], cpt: Sequence[RunScores], scope: str
) -> Verdict:
    """Claim (d) for one extension: ``cpt`` against ``control`` (seeds, lowest first)."""
    rule = RULE_D.format(level=LEVEL)
    paper = "none: this check is ours, not the paper's."
    return _short_below("d", CLAIM_D, scope, paper, rule, control, cpt, "ours", None)


def verdict_longred_keeps_short(
    base: Sequence[RunScores],
    longred: Sequence[RunScores],
    scope: str,
    paper: str,
    method: str,
    *,
    premises: Sequence[Verdict],
    cpt_gain: float | None,
    recovered: float | None = None,
    original: Sequence[RunScores] = (),
) -> Verdict:
    """Claim (b) for one extension, one LongReD variant and one baseline (runs: seeds, lowest
    first): ``cpt`` gives the verdict keyed ``b``, ``mix-cpt`` (data-matched) ``b'``, Table 7's
    ``merge`` and ``attention-only`` (:data:`T7_BASELINES`) ``T7m`` and ``T7p``.

    ``premises`` are the extension's (a) and (e) verdicts (the gate), ``cpt_gain`` CPT's RULER
    gain over zero-shot (the margin's scale), ``recovered`` the fraction of the baseline's
    Short Avg loss the paper's method recovers (:func:`paper_recovered_b`) and ``original`` the
    original's runs, whose Short Avg minus the baseline's is the loss here."""
    row, base_row = longred[0].row, base[0].row
    key, baseline, _ = {**B_BASELINES, **T7_BASELINES}[base_row]
    claim = CLAIM_B.format(method=method, baseline=baseline, row=row, base=base_row)
    rule = RULE_B.format(
        level=LEVEL, row=row, base=base_row, fraction=LONG_MARGIN_FRACTION, floor=RULER_FLOOR
    )
    passed, gate = premise_gate(premises)
    if not premises:
        passed, gate = False, "premises (a) and (e) not measured here: not comparable."
    short_ci, n_short = seed_diff(base, longred, "short")
    ruler_ci, n_ruler = seed_diff(base, longred, "ruler")
    (base_short, short), (base_ruler, ruler) = (
        compared_means(base, longred, what) for what in ("short", "ruler")
    )
    head = (
        f"`{row}` Short Avg {_fmt(short)}, RULER {_fmt(ruler)}{seeds_note(longred)}; "
        f"`{base_row}` Short Avg {_fmt(base_short)}, RULER {_fmt(base_ruler)}{seeds_note(base)}"
    )
    margin = long_margin(cpt_gain or 0.0)
    orig_short, loss_base = (compared_means(original, base, "short") if original
                             else (None, base_short))  # fmt: skip
    effect = recovered_effect(recovered, orig_short, loss_base)
    scaled = recovered_text(recovered, orig_short, loss_base, f"`{base_row}`")
    short_text = (f"Short Avg difference {fmt_interval(short_ci)} (n={n_short} documents)"
                  if short_ci is not None
                  else no_interval_text(n_short, "per-document Short"))  # fmt: skip
    ruler_text = (f"RULER difference {fmt_interval(ruler_ci)} (n={n_ruler} samples)"
                  if ruler_ci is not None
                  else no_interval_text(n_ruler, "per-sample RULER"))  # fmt: skip
    ours = (
        f"{head}, each on the documents every compared run scored. {short_text}; {ruler_text}, "
        f"margin {margin:.2f} ({LONG_MARGIN_FRACTION:g} x CPT's RULER gain {_fmt(cpt_gain)}); "
        f"{LEVEL:.0%} interval over seeds and paired documents.{scaled}"
    )
    if not passed:
        return Verdict(key, claim, scope, paper, ours, NOT_COMPARABLE, rule, premise=gate)
    # A part without an interval is not comparable; the other is judged, and refutes the claim
    # on its own where it is not reproduced.
    long_label = NOT_COMPARABLE if ruler_ci is None else judge(ruler_ci, ABOVE, bound=-margin)
    if below_ruler_floor(base_ruler, ruler):
        long_label, ours = NOT_COMPARABLE, ours + floor_text(base_ruler, ruler)
    elif long_label == UNDECIDED:
        ours += margin_resolution(ruler_ci, margin)
    short_label = NOT_COMPARABLE if short_ci is None else judge(short_ci, ABOVE, paper=effect)
    label = combine([long_label, short_label])
    applied = f" Applied: long part {long_label}, short part {short_label}."
    return Verdict(key, claim, scope, paper, ours, label, rule + applied, premise=gate)
