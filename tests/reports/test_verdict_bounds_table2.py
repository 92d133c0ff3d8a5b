"""The sample sizes that LongReD Table 2's verdict
(:func:`~longred_bench.reports.table2_verdicts.verdict_long_short`) states: the judged Short
Avg difference over its documents, the reported RULER difference over its samples."""

from __future__ import annotations

from longred_bench.reports.table2_verdicts import verdict_long_short
from longred_bench.reports.verdict_stats import RunScores
from longred_bench.reports.verdicts import REPRODUCED


def _run(row: str, short: float, seed: int = 0) -> RunScores:
    """Short: 90 documents at ``short`` +-1; RULER: the first 4 of 30 samples."""
    docs = {i: short + (i % 3) - 1 for i in range(90)}
    per = {i: 100.0 if i < 4 else 0.0 for i in range(30)}
    return RunScores(
        "abf:theta=2e6", row, seed, short, 100.0 * 4 / 30,
        short={"General": {"cloze": docs}}, ruler={"niah_single_1": {1024: per}},
    )  # fmt: skip


def test_each_difference_states_its_own_n() -> None:
    long = [_run("cpt", v, s) for s, v in enumerate((50.0, 50.2))]
    mine = [_run("long-short-cpt", v, s) for s, v in enumerate((53.0, 53.1))]
    v = verdict_long_short(long, mine, "s")
    assert v.label == REPRODUCED
    assert "n=90 documents)" in v.ours
    assert "(n=30; reported, not judged)" in v.ours
