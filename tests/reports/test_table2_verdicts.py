"""LongReD Table 2's claim (``longred_bench.reports.table2_verdicts``) on hand-built
``RunScores``: long+short above long-only by an interval over seeds and documents, each label,
and no verdict without shared documents."""

from __future__ import annotations

from longred_bench.reports.table2_verdicts import verdict_long_short
from longred_bench.reports.verdict_stats import RunScores
from longred_bench.reports.verdicts import NOT_COMPARABLE, NOT_REPRODUCED, REPRODUCED, UNDECIDED


def _run(row: str, short: float, seed: int = 0, hits: int = 4) -> RunScores:
    """Short: 200 documents at ``short`` +-1; RULER: the first ``hits`` of 40 samples."""
    docs = {i: short + (i % 3) - 1 for i in range(200)}
    per = {i: 100.0 if i < hits else 0.0 for i in range(40)}
    return RunScores(
        "abf:theta=2e6", row, seed, short, 2.5 * hits,
        short={"General": {"cloze": docs}}, ruler={"niah_single_1": {1024: per}},
    )  # fmt: skip


def _rows(row: str, values: tuple[float, ...]) -> list[RunScores]:
    return [_run(row, v, s) for s, v in enumerate(values)]


ORIGINAL = [_run("original", 54.0)]  # CPT (about 50) lost 4 points of Short Avg


def test_long_short_above_long_is_reproduced_and_below_is_not() -> None:
    long = _rows("cpt", (50.0, 50.2, 49.9))
    above = verdict_long_short(long, _rows("long-short-cpt", (52.0, 52.1, 51.9)), "s")
    assert (above.key, above.label) == ("T2", REPRODUCED)
    assert "RULER `long-short-cpt` 10.00 vs `cpt` 10.00" in above.ours
    # No difference, narrowly: the interval rules out the paper's gain (82% of CPT's loss of
    # 3.97 recovered = +3.26).
    same_rows = _rows("long-short-cpt", (50.1, 49.9, 50.0))
    same = verdict_long_short(long, same_rows, "s", original=ORIGINAL)
    assert same.label == NOT_REPRODUCED and "The paper's effect, scaled: +3.26 (82%" in same.ours
    # Without the original's scores, or where CPT lost nothing, only 0 bounds it.
    assert verdict_long_short(long, same_rows, "s").label == UNDECIDED
    kept = verdict_long_short(long, same_rows, "s", original=[_run("original", 49.0)])
    assert kept.label == UNDECIDED and "`cpt` lost no Short Avg here" in kept.ours
    below = verdict_long_short(long, _rows("long-short-cpt", (48.0, 48.1, 47.9)), "s")
    assert below.label == NOT_REPRODUCED


def test_seeds_that_disagree_leave_it_undecided() -> None:
    long = _rows("cpt", (50.0, 50.1, 50.0))
    # +1.0 on average, but its own seeds span 10 points: the seed-aware interval holds both 0
    # and the paper's effect.
    noisy = verdict_long_short(long, _rows("long-short-cpt", (46.0, 56.0, 51.0)), "s")
    assert noisy.label == UNDECIDED and "`long-short-cpt` 10.00" in noisy.ours


def test_no_shared_documents_is_not_comparable() -> None:
    bare = [RunScores("abf:theta=2e6", "cpt", 0, 50.0, 0.0)]
    v = verdict_long_short(bare, _rows("long-short-cpt", (52.0,)), "s")
    assert v.label == NOT_COMPARABLE and "no per-document scores" in v.ours


def test_the_papers_effect_bounds_only_the_papers_kind_of_extension() -> None:
    """The same narrow interval around 0 rules out the paper's ABF effect at ABF (not
    reproduced), and at another kind of extension only 0 bounds it (undecided)."""
    long = _rows("cpt", (50.0, 50.2, 49.9))
    same = _rows("long-short-cpt", (50.1, 49.9, 50.0))
    assert verdict_long_short(long, same, "s", original=ORIGINAL).label == NOT_REPRODUCED
    at_pi = verdict_long_short(long, same, "s", paper_setting=False, original=ORIGINAL)
    assert at_pi.label == UNDECIDED and "no effect of it bounds this interval" in at_pi.ours


def test_the_claim_is_gated_on_premise_a() -> None:
    from longred_bench.reports.verdict_rules import Verdict

    long = _rows("cpt", (50.0, 50.2, 49.9))
    mixed = _rows("long-short-cpt", (52.0, 52.1, 51.9))
    a = lambda label: Verdict("a", "c", "s", "p", "o", label, "r")  # noqa: E731
    assert verdict_long_short(long, mixed, "s").label == REPRODUCED  # no gate: the interval
    passed = verdict_long_short(long, mixed, "s", premises=[a(REPRODUCED)])
    assert passed.label == REPRODUCED and "passed" in passed.premise
    failed = verdict_long_short(long, mixed, "s", premises=[a(NOT_REPRODUCED)])
    assert failed.label == NOT_COMPARABLE and "(a) not reproduced" in failed.premise
    unmeasured = verdict_long_short(long, mixed, "s", premises=[])
    assert unmeasured.label == NOT_COMPARABLE and "not measured" in unmeasured.premise
