"""The premises of an extension (:func:`~longred_bench.reports.premises.extension_premises`)
from synthetic records: every seed of ``cpt`` enters claim (e) and CPT's RULER gain (the scale
of the non-inferiority margin), and a gated claim needs both premises measured."""

from __future__ import annotations

from typing import Any

import pytest

from longred_bench.reports.premises import Premises, extension_premises
from longred_bench.reports.runs import collect_runs
from longred_bench.reports.short_avg import short_categories
from longred_bench.reports.verdict_rules import REPRODUCED, Verdict

EXT = "abf:theta=4e4"
PROV = {"device": "CPU test", "git_commit": "abc123", "versions": {}, "seed": 0, "config": {}}
SHORT_TASKS = ("longred_tiny_lastword", "longred_tiny_nextsent", "longred_tiny_swap",
               "longred_tiny_replace")  # fmt: skip
N = 40  # documents per short task, samples per RULER task and length


def _ones(p: float) -> list[float]:
    k = round(p * N)
    return [1.0] * k + [0.0] * (N - k)


def _records(row: str, extension: str | None, short: float, ruler: float | None = None,
             seed: int = 0) -> list[dict[str, Any]]:  # fmt: skip
    """One run: every short task at accuracy ``short``; RULER (if given) the fraction ``ruler``
    of its samples scored 100, on two tasks at one length."""
    common = {"row": row, "extension": extension, "seed": seed, "model": "tiny-base",
              "rope": extension, "provenance": PROV, "train": None}  # fmt: skip
    window = 256 if extension is None else 1024
    out: list[dict[str, Any]] = []
    for task in SHORT_TASKS:
        base = {**common, "suite": "short_tiny", "task": task, "length": None}
        out.append({**base, "kind": "eval", "metric": "acc", "value": short, "n_samples": N,
                    "n_over_length": 0, "group": "longred_short_tiny",
                    "max_position_embeddings": window})  # fmt: skip
        out += [{**base, "kind": "eval_item", "metric": "acc", "doc_id": i, "value": v}
                for i, v in enumerate(_ones(short))]  # fmt: skip
    if ruler is None:
        return out
    base = {**common, "suite": "ruler", "metric": "score", "max_position_embeddings": window}
    for length in (1024, None):
        out.append({**base, "kind": "eval", "task": "longred_ruler", "length": length,
                    "value": 100.0 * ruler, "n_samples": None})  # fmt: skip
    for t, task in enumerate(("longred_ruler_vt", "longred_ruler_fwe")):
        out += [{**base, "kind": "eval_item", "task": task, "length": 1024,
                 "doc_id": t * 1000 + i, "value": 100.0 * v}
                for i, v in enumerate(_ones(ruler))]  # fmt: skip
    return out


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
