"""Figure 2's points (retention and hidden similarity per extended model) and its rule on
hand-built records: each label reachable, too few models not comparable."""

from __future__ import annotations

import pytest

from longred_bench.errors import UserError
from longred_bench.metrics.stats import Interval
from longred_bench.reports.fig2_report import collect_points, fig2_verdicts, spearman_label
from longred_bench.reports.verdicts import NOT_COMPARABLE, NOT_REPRODUCED, REPRODUCED

TASK = "longred_tiny_swap"


def _records(series: str, ext: str | None, score: float, similarity: float | None) -> list:
    row = "original" if ext is None else series
    labels = {"row": row, "extension": ext, "seed": 0, "series": series}
    out = [{"kind": "eval", "suite": "short_tiny", "task": TASK, "metric": "acc,none",
            "value": score / 100, "n_samples": 10, **labels}]  # fmt: skip
    if similarity is not None:
        out.append(
            {
                "kind": "drift_summary",
                "mean_hidden_cosine": similarity,
                "text_hidden_cosine": [similarity - 0.001, similarity + 0.001],
                **labels,
            }
        )
    return out


def _series(pairs, series="cpt"):
    records = _records("original", None, 80.0, None)
    for i, (sim, score) in enumerate(pairs):
        records += _records(series, f"abf:theta={i + 2}e6", score, sim)
    return records


def test_points_are_retention_against_similarity():
    points, base, _ = collect_points(_series([(0.99, 76.0), (0.95, 60.0), (0.90, 40.0)]))
    assert base == pytest.approx(80.0)
    assert [round(p.retention, 3) for p in points] == [0.95, 0.75, 0.5]
    assert points[0].similarity.low == pytest.approx(0.989)


def test_rule_reaches_every_label():
    rising = [(0.80 + 0.015 * i, 50.0 + 2 * i) for i in range(13)]
    falling = [(s, 100.0 - v) for s, v in rising]
    assert fig2_verdicts(collect_points(_series(rising))[0])[0].label == REPRODUCED
    assert fig2_verdicts(collect_points(_series(falling))[0])[0].label == NOT_REPRODUCED
    few = fig2_verdicts(collect_points(_series(rising[:5]))[0])[0]
    assert few.label == NOT_COMPARABLE and "over 5 models" in few.ours
    assert spearman_label(Interval(0.2, -0.1, 0.5), 13) == NOT_COMPARABLE


def test_the_original_is_required():
    records = [r for r in _series([(0.9, 50.0)] * 3) if r["row"] != "original"]
    with pytest.raises(UserError, match="original model"):
        collect_points(records)
