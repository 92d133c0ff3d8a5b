"""A row's seed spread (``max - min`` of its seeds' scores), as the run sections and the verdict
notes print it: on the documents every seed scored where per-document scores exist, else on
the tidy averages; none for fewer than two seeds with a score."""

from __future__ import annotations

import pytest

from longred_bench.reports.verdict_stats import RunScores, seed_spread


def _run(seed: int, short_avg: float | None, docs: dict[int, float] | None = None) -> RunScores:
    short = {"reading": {"task": docs}} if docs else {}
    return RunScores("pi:factor=2", "cpt", seed, short_avg, None, short=short)


def test_the_spread_is_over_the_documents_every_seed_scored() -> None:
    """Seed 2 scored a document the others did not: it is left out of seed 2's mean (40, not
    53), and the spread is the largest mean less the smallest, wherever they are listed."""
    runs = [_run(0, 1.0, {0: 40.0, 1: 20.0}), _run(1, 2.0, {0: 10.0, 1: 30.0}),
            _run(2, 3.0, {0: 50.0, 1: 30.0, 2: 80.0})]  # fmt: skip
    assert seed_spread(runs) == pytest.approx(40.0 - 20.0)


def test_without_documents_the_spread_is_over_the_tidy_averages() -> None:
    runs = [_run(0, 30.0), _run(1, 25.0), _run(2, 35.0)]
    assert seed_spread(runs) == pytest.approx(10.0)
    assert seed_spread([_run(0, 30.0), _run(1, None)]) is None  # one seed with a score
    assert seed_spread([_run(0, 30.0)]) is None
