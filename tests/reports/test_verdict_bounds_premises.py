"""The premises of an extension (:func:`~longred_bench.reports.premises.extension_premises`)
from synthetic records: every seed of ``cpt`` enters claim (e) and CPT's RULER gain (the scale
of the non-inferiority margin), and a gated claim needs both premises measured."""

from __future__ import annotations

from typing import Any

import pytest
from report_helpers import tiny_run

from longred_bench.reports.premises import Premises, extension_premises
from longred_bench.reports.runs import collect_runs
from longred_bench.reports.short_avg import short_categories
from longred_bench.reports.verdict_rules import REPRODUCED, Verdict

EXT = "abf:theta=4e4"


def _records(row: str, extension: str | None, short: float, ruler: float | None = None,
             seed: int = 0) -> list[dict[str, Any]]:  # fmt: skip
    """One run: every short task at accuracy ``short``; RULER (if given) the fraction ``ruler``
    of its samples scored 100, on two tasks at one length."""
    return tiny_run(row, extension, short, ruler, seed=seed,
                    ruler_tasks=("longred_ruler_vt", "longred_ruler_fwe"))  # fmt: skip


def _premises(cpt_ruler: tuple[float, ...]) -> Premises:
    recs = _records("original", None, 0.8)
    recs += _records("zero-shot", EXT, 0.7, ruler=0.2)
    for seed, ruler in enumerate(cpt_ruler):
        recs += _records("cpt", EXT, 0.4, ruler=ruler, seed=seed)
    return extension_premises(collect_runs(recs), short_categories(recs), EXT)


def test_cpts_ruler_gain_is_over_every_seed() -> None:
    one = _premises((0.5,))
    assert one.cpt_gain == pytest.approx(30.0)
    # Seeds at 50 and 90 points: CPT's RULER is their mean, 70, a gain of 50 over zero-shot's 20
    # (the first seed alone would give 30).
    two = _premises((0.5, 0.9))
    assert two.cpt_gain == pytest.approx(50.0)


def test_claim_e_as_a_premise_reads_every_seed_of_cpt() -> None:
    two = _premises((0.5, 0.9))
    assert two.e is not None
    assert "RULER `cpt` 70.00 (mean of 2 seeds) vs `zero-shot` 20.00" in two.e.ours
    assert "+50.00" in two.e.ours


def test_the_gate_needs_both_premises_measured() -> None:
    a = Verdict("a", "c", "s", "p", "o", REPRODUCED, "r")
    # (e) not measured (no zero-shot row): a gated claim gets no premises, so it is not
    # comparable, not judged on (a) alone.
    assert Premises("ABF", 4.0, "s", a, None, None).gate == []
    assert Premises("ABF", 4.0, "s", a, a, 1.0).gate == [a, a]
