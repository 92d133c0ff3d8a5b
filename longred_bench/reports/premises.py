"""The premises of LongReD's comparisons at one extension, from a report's runs: claim (a) (CPT
loses short-text ability), claim (e) (CPT learns long-context ability) and CPT's RULER gain over
the zero-shot extension (the scale of the non-inferiority margin of
:mod:`longred_bench.reports.verdict_rules`). Table 3's claim (b), Table 7 and the ablations of
Tables 4-6 are gated on (a) and (e)."""

from __future__ import annotations

from dataclasses import dataclass

from longred_bench.reports.long_verdict import verdict_cpt_learns_long
from longred_bench.reports.runs import Run, RunKey, baseline, extension_factor, run_scores, seeds
from longred_bench.reports.verdict_rules import at_paper_setting
from longred_bench.reports.verdict_stats import RunScores, compared_means
from longred_bench.reports.verdicts import (
    Verdict,
    extension_scope,
    extension_setting,
    paper_evidence_a,
    paper_relative_a,
    table3_ran,
    verdict_cpt_loses_short,
)


@dataclass(frozen=True)
class Premises:
    """An extension's setting (``pe``, ``factor``, report ``scope``), its (a) and (e) verdicts
    where the rows they compare were evaluated, and CPT's RULER gain over zero-shot."""

    pe: str
    factor: float
    scope: str
    a: Verdict | None
    e: Verdict | None
    cpt_gain: float | None

    @property
    def verdicts(self) -> list[Verdict]:
        """(a) and (e), those measured."""
        return [v for v in (self.a, self.e) if v is not None]

    @property
    def gate(self) -> list[Verdict]:
        """The premise verdicts a gated claim needs: both, or none when either is missing
        (then the gated claim is not comparable: its premises were not measured)."""
        return [self.a, self.e] if self.a is not None and self.e is not None else []


def extension_premises(
    runs: dict[RunKey, Run], cats: dict[str, tuple[str, ...]], ext: str
) -> Premises:
    """:class:`Premises` of extension ``ext`` from the report's ``runs``."""

    def scores(keys: list[RunKey]) -> list[RunScores]:
        return [run_scores(k, runs[k], cats) for k in keys]

    pe, factor = extension_setting(ext, extension_factor(runs, ext))
    scope = extension_scope(ext, pe, factor)
    original = scores(baseline(runs, ext, "original"))
    cpt = scores(seeds(runs, ext, "cpt"))
    zero_shot = scores(seeds(runs, ext, "zero-shot"))
    a = e = gain = None
    if original and cpt:
        paper = paper_evidence_a(pe, factor)
        a = verdict_cpt_loses_short(original[0], cpt, scope, paper, paper_relative_a(pe, factor))
        a = at_paper_setting(a, table3_ran(pe, factor))
    if zero_shot and cpt:
        e = verdict_cpt_learns_long(zero_shot[0], cpt, scope)
        low, high = compared_means(zero_shot[:1], cpt, "ruler")
        gain = None if low is None or high is None else high - low
    return Premises(pe, factor, scope, a, e, gain)
