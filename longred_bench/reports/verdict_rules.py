"""The verdict vocabulary every report uses, and the primitives that turn an interval into a label.

Four labels, with one meaning in every report:

- *reproduced*: the interval of the claim's effect clears the claim's bound (for "A below B",
  the interval of ``A - B`` lies entirely below the bound, usually 0);
- *not reproduced*: the interval lies entirely on the wrong side of the bound, or it excludes
  the paper's effect scaled to this metric (:func:`scaled_effect`) on the side of "no effect"
  (the samples rule out an effect as large as the paper's);
- *undecided*: neither: the interval contains the bound and, where the paper gives an effect,
  that effect too; the samples cannot tell;
- *not comparable*: only where a stated premise or floor fails (a premise claim not
  reproduced, both rows below a floor, no per-item scores to pair or nothing to resample), never
  for an interval that merely contains 0.

Seed variance enters once, through the seed-aware interval of
:func:`~longred_bench.reports.verdict_stats.seed_diff`; no rule adds a second seed test.

:func:`judge` labels one directional effect; :func:`combine` joins the labels of a claim's
parts; :func:`premise_gate` says why a claim is not comparable when its premises are not
reproduced; :func:`below_ruler_floor` is the floor every RULER comparison applies (each
report's rule sentence states it). "Similar long ability" is non-inferiority with a margin of
:data:`LONG_MARGIN_FRACTION` times CPT's RULER gain over the zero-shot extension
(:func:`long_margin`), the same constant in Tables 3 and 7 and LongRecipe.

A verdict's source (:data:`SOURCES`) says whose claim it checks: the paper's, at a setting the
paper ran; the paper's claim at a setting it did not run (:func:`at_paper_setting`: tested
beyond the paper, e.g. at PI where its table is ABF only); or a check of this suite's own.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from longred_bench.metrics.stats import Interval

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
UNDECIDED = "undecided"
NOT_COMPARABLE = "not comparable"
LABELS = (REPRODUCED, NOT_REPRODUCED, UNDECIDED, NOT_COMPARABLE)
# "Similar long-context ability": a method's RULER may sit this fraction of CPT's RULER gain over
# the zero-shot extension below CPT's and still count as non-inferior (Tables 3, 7, LongRecipe).
LONG_MARGIN_FRACTION = 0.25
# RULER's floor (points, 0-100): where every compared row scores below it, RULER measures no
# long-context ability on either side and a comparison of their RULER is not comparable.
RULER_FLOOR = 5.0
ABOVE, BELOW = +1, -1
# What a verdict's source means, as its report's summary table says it.
SOURCES = {
    "paper": "paper",
    "elsewhere": "paper's claim, at a setting it did not run",
    "ours": "ours (not in the paper)",
}

LABEL_RULE = (
    "Labels: reproduced = the interval clears the claim's bound (tested first); not reproduced "
    "= it lies on the wrong side of the bound or, holding the bound, short of the paper's effect "
    "scaled to this metric; undecided = neither (the samples cannot tell); not comparable = a "
    "stated premise or floor failed (tested before the interval), or no paired scores give an "
    "interval."
)


@dataclass(frozen=True)
class Verdict:
    """A claim checked at one setting: the evidence on both sides, the label and its rule.

    ``premise``, where set, is the gate's outcome: which premise claims were checked and how
    they came out (a claim whose premise is not reproduced is not comparable)."""

    key: str
    claim: str
    scope: str
    paper: str
    ours: str
    label: str
    rule: str
    source: str = "paper"  # a key of SOURCES
    premise: str = ""

    def __post_init__(self) -> None:
        if self.label not in LABELS:
            raise ValueError(f"verdict label {self.label!r} is not one of {LABELS}")
        if self.source not in SOURCES:
            raise ValueError(f"verdict source {self.source!r} is not one of {tuple(SOURCES)}")


def at_paper_setting(verdict: Verdict, ran: bool) -> Verdict:
    """``verdict``, marked ``"elsewhere"`` where it is the paper's claim and the paper did not
    run its setting (``ran`` false); a check of this suite's own unchanged."""
    return verdict if ran or verdict.source != "paper" else replace(verdict, source="elsewhere")


def judge(ci: Interval, side: int, bound: float = 0.0, paper: float | None = None) -> str:
    """The label of a claim that an effect lies on ``side`` (:data:`ABOVE` or :data:`BELOW`) of
    ``bound``, from the interval ``ci`` of that effect.

    ``paper``, the paper's effect scaled to this metric, counts only where it lies on the
    claim's side of ``bound`` (one short of it adds nothing: an interval short of that is short
    of the bound too): an interval between the bound and short of it (excluding it) is not
    reproduced. Without it, only an interval entirely on the wrong side is. An interval
    with a NaN bound (no samples to resample) is refused: its claim is not comparable, which the
    caller says with its own floor.
    """
    if side not in (ABOVE, BELOW):
        raise ValueError(f"side must be ABOVE (+1) or BELOW (-1), not {side!r}")
    if math.isnan(ci.low) or math.isnan(ci.high):
        raise ValueError(f"cannot judge an interval with a NaN bound ({ci.low}, {ci.high})")
    low, high = (ci.low, ci.high) if side == ABOVE else (-ci.high, -ci.low)
    bound = bound * side
    if low > bound:
        return REPRODUCED
    if high < bound:
        return NOT_REPRODUCED
    if paper is not None and high < paper * side:  # a paper effect short of the bound: above
        return NOT_REPRODUCED
    return UNDECIDED


def combine(labels: Iterable[str]) -> str:
    """One label for a claim made of parts that must all hold: not reproduced if any part is
    (one refuted part refutes the whole, whatever the others), else not comparable if any part
    is, else undecided if any part is, else reproduced."""
    labels = list(labels)
    for label in (NOT_REPRODUCED, NOT_COMPARABLE, UNDECIDED):
        if label in labels:
            return label
    if not labels:
        raise ValueError("combine needs at least one label")
    return REPRODUCED


def premise_gate(premises: Sequence[Verdict]) -> tuple[bool, str]:
    """(all premises reproduced, the gate's outcome as a sentence)."""
    parts = [f"({p.key}) {p.label}" for p in premises]
    passed = all(p.label == REPRODUCED for p in premises)
    text = (
        "premises "
        + ", ".join(parts)
        + (": passed." if passed else ": not all reproduced, so this claim is not comparable.")
    )
    return passed, text


def scaled_effect(paper_diff: float, paper_reference: float, our_reference: float) -> float:
    """The paper's effect ``paper_diff`` (on a metric where its reference row scored
    ``paper_reference``) scaled to this metric, where our reference row scored
    ``our_reference``: the same relative change."""
    if paper_reference == 0:
        raise ValueError("the paper's reference score is 0: its effect has no relative size")
    return paper_diff / paper_reference * our_reference


def recovered_effect(fraction: float | None, original: float | None,
                     baseline: float | None) -> float | None:  # fmt: skip
    """The paper's effect of a method that keeps short-text ability, scaled to this metric as
    the same ``fraction`` of the baseline's loss (``original - baseline`` here) recovered; None
    where the paper gives no fraction, a score is unknown, or the baseline lost nothing here
    (then no effect of the paper's bounds the interval: there was nothing to recover)."""
    if fraction is None or original is None or baseline is None or original <= baseline:
        return None
    return fraction * (original - baseline)


def recovered_text(fraction: float | None, original: float | None, baseline: float | None,
                   name: str) -> str:  # fmt: skip
    """The sentence a verdict's evidence gets on :func:`recovered_effect`."""
    if fraction is None:
        return ""
    if original is None or baseline is None:
        return " The paper's effect is not scaled here: the original's scores are missing."
    loss = original - baseline
    effect = recovered_effect(fraction, original, baseline)
    if effect is None:
        return (f" {name} lost no Short Avg here ({-loss:+.2f} against the original), so the "
                "paper's effect (a fraction of its baseline's loss) bounds nothing.")  # fmt: skip
    return (f" The paper's effect, scaled: {effect:+.2f} ({fraction:.0%} of {name}'s loss "
            f"against the original, {loss:.2f} here, recovered as in the paper).")  # fmt: skip


def long_margin(cpt_gain: float) -> float:
    """The non-inferiority margin of "similar long-context ability": a fraction
    (:data:`LONG_MARGIN_FRACTION`) of CPT's RULER gain over the zero-shot extension."""
    return LONG_MARGIN_FRACTION * max(cpt_gain, 0.0)


def margin_resolution(ci: Interval, margin: float) -> str:
    """The sentence a non-inferiority verdict's evidence gets where its interval is too wide to
    resolve the margin: with a half-width of at least ``margin``, an interval centred on 0 (a
    method exactly as good as its baseline) still reaches below ``-margin``, so at this sample
    size "undecided" is the most the comparison can say, not a finding about the method."""
    half = (ci.high - ci.low) / 2
    if half < margin:
        return ""
    return (f" Resolution: the interval's half-width {half:.2f} is at least the margin "
            f"{margin:.2f}, so even a row equal to its baseline could not read reproduced at this "
            "sample size.")  # fmt: skip


def below_ruler_floor(*means: float | None) -> bool:
    """Whether every one of the compared RULER ``means`` (0-100) lies below
    :data:`RULER_FLOOR` (the floor rule); False if any is unknown. Means are compared at 1e-9
    points, so a mean equal to the floor stays on it whatever order a float sum took."""
    return bool(means) and all(m is not None and round(m, 9) < RULER_FLOOR for m in means)


def floor_text(*means: float | None) -> str:
    """The sentence a verdict's evidence gets when :func:`below_ruler_floor` holds."""
    shown = ", ".join(f"{m:.2f}" for m in means if m is not None)
    return f" RULER {shown}: all below the floor of {RULER_FLOOR:g} points."


def signed(value: float, digits: int = 2) -> str:
    """``+1.23``: a signed number at ``digits`` decimals, or with as many more (up to 3) as show
    a value that is not zero as not zero (``-0.0004``, not ``-0.000``); smaller, ``-2.0e-07``."""
    value = value + 0.0  # -0.0 is zero, and reads +0.00
    for places in range(digits, digits + 4):
        text = f"{value:+.{places}f}"
        if value == 0 or text.strip("+-0.") or math.isnan(value):
            return text
    return f"{value:+.1e}"


def fmt_interval(ci: Interval, digits: int = 2) -> str:
    """``+1.23 [+0.50, +2.01]``: a signed difference and its interval (each by :func:`signed`)."""
    return f"{signed(ci.estimate, digits)} [{signed(ci.low, digits)}, {signed(ci.high, digits)}]"


def verdicts_markdown(verdicts: Sequence[Verdict]) -> list[str]:
    """Markdown lines: a summary table, the label rule, then each verdict's evidence, premise
    gate (where it has one) and rule."""
    if not verdicts:
        return ["No claim could be checked: the rows a claim compares are missing.", ""]
    lines = ["| claim | setting | verdict | source |", "|---|---|---|---|"]
    for v in verdicts:
        lines.append(f"| ({v.key}) {v.claim} | {v.scope} | **{v.label}** | {SOURCES[v.source]} |")
    lines += ["", LABEL_RULE, ""]
    for v in verdicts:
        lines += [f"**({v.key}) {v.scope}: {v.label}.** {v.claim}", "", f"- Paper: {v.paper}"]
        lines += [f"- Premise: {v.premise}"] if v.premise else []
        lines += [f"- Ours: {v.ours}", f"- Rule: {v.rule}", ""]
    return lines
