"""LongReD Table 7's claims are claim (b) against its baselines: keyed ``T7m`` (model merging)
and ``T7p`` (attention-only tuning), with the same rule and premise gate as Table 3's (b)."""

from __future__ import annotations

from functools import partial

from longred_bench.reports.verdict_rules import Verdict
from longred_bench.reports.verdict_stats import RunScores
from longred_bench.reports.verdicts import (
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    REPRODUCED,
    verdict_longred_keeps_short,
)

PREMISES = [Verdict(k, "c", "s", "p", "o", REPRODUCED, "r") for k in ("a", "e")]
keeps = partial(verdict_longred_keeps_short, premises=PREMISES, cpt_gain=20.0)


def _run(row: str, short: float, hits: int, seed: int) -> RunScores:
    docs = {i: short + (i % 3) - 1 for i in range(200)}
    per = {i: 100.0 if i < hits else 0.0 for i in range(40)}
    return RunScores(
        "abf:theta=2e6", row, seed, short, 2.5 * hits,
        short={"General": {"cloze": docs}}, ruler={"niah_single_1": {1024: per}},
    )  # fmt: skip


def _rows(row: str, short: float, hits: int) -> list[RunScores]:
    return [_run(row, short + 0.1 * s, hits, s) for s in range(3)]


def test_table7_baselines_have_their_own_keys_and_table3s_rule() -> None:
    longred = _rows("longred-c", 52.0, 8)
    merge = keeps(_rows("merge", 49.0, 8), longred, "s", "p", "LongReD-C")
    assert (merge.key, merge.label) == ("T7m", REPRODUCED)
    assert "model merging" in merge.claim
    pet = keeps(_rows("attention-only", 55.0, 8), longred, "s", "p", "LongReD-C")
    assert (pet.key, pet.label) == ("T7p", NOT_REPRODUCED)
    # Far worse RULER than the baseline (-55 points, margin 5): a short-text gain is not credited.
    worse = keeps(_rows("merge", 49.0, 30), _rows("longred-c", 52.0, 8), "s", "p", "LongReD-C")
    assert worse.label == NOT_REPRODUCED and "long part not reproduced" in worse.rule
    # Without Table 3's premises measured at the extension: not comparable.
    gated = keeps(_rows("merge", 49.0, 8), longred, "s", "p", "LongReD-C", premises=[])
    assert gated.label == NOT_COMPARABLE
