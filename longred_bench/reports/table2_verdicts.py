"""LongReD Table 2's claim, and the rule, in code, that labels it at one extension.

LongReD's Table 2 (Llama-3-8B, 32K by ABF) continues pre-training on long data only (``Long``)
and on long data with half of it replaced by text of the original window (``Long+Short``), and
the second scores higher on every short benchmark shown (MMLU, HumanEval, PIQA, TriviaQA). The
rule takes the two rows (``cpt``, ``long-short-cpt``) as
:class:`~longred_bench.reports.verdict_stats.RunScores` (every seed of a row); its interval
counts the seeds of each row as well as the documents all their runs scored
(:func:`~longred_bench.reports.verdict_stats.seed_diff`):

(T2) *long+short data keeps more short-text ability*: the interval of
     ``Short Avg(long-short-cpt) - Short Avg(cpt)`` lies entirely above 0 -> reproduced;
     entirely below 0, or holding 0 and below the paper's effect scaled to this Short Avg
     (:data:`PAPER_RECOVERED`, the fraction of long-only CPT's loss the paper's Long+Short
     recovers, x `cpt`'s loss against the original here; at an ABF extension only, the
     paper's setting; none where `cpt` lost nothing here) -> not reproduced; otherwise
     undecided
     (:func:`~longred_bench.reports.verdict_rules.judge`). Premise: Table 3's claim (a) at the
     extension (long-only CPT loses short-text ability) reproduced, else not comparable (the
     gate's outcome is shown). Without shared per-document scores there is no interval -> not
     comparable.

The RULER difference of the same two rows is reported beside it (the paper's Table 3 has the
data-mixed CPT at about long CPT's RULER), not judged.
"""

from __future__ import annotations

from collections.abc import Sequence

from longred_bench.reports.paper import TABLE2, TABLE3
from longred_bench.reports.verdict_rules import (
    ABOVE,
    NOT_COMPARABLE,
    Verdict,
    fmt_interval,
    judge,
    premise_gate,
    recovered_effect,
    recovered_text,
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

LONG, LONG_SHORT = "cpt", "long-short-cpt"
CLAIM_T2 = (
    "Replacing half of the long data with text of the original window keeps more short-text "
    "ability than long data only (Short Avg of `long-short-cpt` above `cpt`)."
)
RULE_T2 = (
    "premise (a) at this extension reproduced (long-only CPT loses short-text ability: without "
    "a loss there is nothing to keep), else not comparable; {level:.0%} interval "
    "over seeds and paired documents of "
    "Short Avg(long-short-cpt) - Short Avg(cpt), each the mean over its seeds: entirely above 0 "
    "-> reproduced; entirely below 0, or holding 0 and below the paper's effect scaled to this "
    "Short Avg (the fraction of long-only CPT's loss the paper's Long+Short recovers, x "
    "`cpt`'s loss against the original here; at ABF extensions only, the paper's Table 2 being "
    "ABF; none where `cpt` lost nothing here) -> not reproduced; otherwise undecided."
)


# The paper's mean relative gain of Long+Short over Long across Table 2's benchmarks.
PAPER_RELATIVE = sum((short - long) / long for _, long, short in TABLE2) / len(TABLE2)


def _paper_recovered() -> float:
    """The fraction of long-only CPT's short-text loss that the paper's Long+Short recovers:
    Table 2's mean relative gain over Long, over the relative loss of Long against the original
    in Table 3 at the same setting (Llama-3-8B 32K ABF: Table 2 gives no original's scores)."""
    long = next(r for r in TABLE3 if (r.model, r.window, r.pe, r.data, r.method)
                == ("Llama-3-8B", "32K", "ABF", "Long", "CPT"))  # fmt: skip
    original = next(r for r in TABLE3 if (r.model, r.method) == ("Llama-3-8B", "original"))
    return PAPER_RELATIVE / ((original.short - long.short) / long.short)


# About 0.82 (a mean relative gain of 6.7% against a relative loss of 8.2%).
PAPER_RECOVERED = _paper_recovered()


def paper_evidence() -> str:
    """The paper's Table 2, as one line."""
    diffs = ", ".join(f"{name} {short - long:+.2f}" for name, long, short in TABLE2)
    return f"Llama-3-8B 32K ABF: Long+Short above Long on every benchmark shown ({diffs})."


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def verdict_long_short(
    long: Sequence[RunScores],
    long_short: Sequence[RunScores],
    scope: str,
    *,
    paper_setting: bool = True,
    premises: Sequence[Verdict] | None = None,
    original: Sequence[RunScores] = (),
) -> Verdict:
    """(T2) at one extension: ``long_short`` (its seeds) against ``long`` (its seeds).
    ``paper_setting``: the extension is the paper's kind (ABF), so its effect, scaled, bounds the
    interval; else only 0 does. ``premises``: the extension's (a) (empty: not measured, so not
    comparable; None: no gate, the interval rule alone). ``original``: the original's runs,
    whose Short Avg minus `cpt`'s is the loss the paper's effect is a fraction of."""
    rule = RULE_T2.format(level=LEVEL)
    passed, gate = True, ""
    if premises is not None:
        passed, gate = (
            premise_gate(premises)
            if premises
            else (False, "premise (a) not measured here: not comparable.")
        )
    ci, n = seed_diff(long, long_short, "short")
    base, mine = compared_means(long, long_short, "short")
    head = (
        f"Short Avg `{LONG_SHORT}` {_fmt(mine)}{seeds_note(long_short)} vs `{LONG}` "
        f"{_fmt(base)}{seeds_note(long)}"
    )
    if ci is None:
        ours = f"{head}; {no_interval_text(n, 'per-document')}."
        return Verdict(
            "T2", CLAIM_T2, scope, paper_evidence(), ours, NOT_COMPARABLE, rule, premise=gate
        )
    spreads = {LONG: seed_spread(long), LONG_SHORT: seed_spread(long_short)}
    ruler_ci, ruler_n = seed_diff(long, long_short, "ruler")
    ruler_base, ruler_mine = compared_means(long, long_short, "ruler")
    ruler = (
        f" RULER `{LONG_SHORT}` {_fmt(ruler_mine)} vs `{LONG}` {_fmt(ruler_base)}: "
        f"{fmt_interval(ruler_ci)} (n={ruler_n}; reported, not judged)."
        if ruler_ci is not None
        else ""
    )
    orig, loss_base = compared_means(original, long, "short") if original else (None, base)
    fraction = PAPER_RECOVERED if paper_setting else None
    effect = recovered_effect(fraction, orig, loss_base)
    scaled = (
        recovered_text(fraction, orig, loss_base, f"`{LONG}`")
        if paper_setting
        else " The paper's Table 2 is at ABF: no effect of it bounds this interval."
    )
    ours = (
        f"{head} on the documents both scored; difference {fmt_interval(ci)} ({LEVEL:.0%} "
        f"interval over seeds and paired documents, n={n} documents).{scaled}"
        f"{spread_text(spreads)}{ruler}"
    )
    label = judge(ci, ABOVE, paper=effect) if passed else NOT_COMPARABLE
    return Verdict("T2", CLAIM_T2, scope, paper_evidence(), ours, label, rule, premise=gate)
