"""Figure 2's points (retention and hidden similarity per extended model) and its rule on
hand-built records: the interval resamples the models and their documents; each label reachable,
too few models or no per-document scores not comparable."""

from __future__ import annotations

import numpy as np
import pytest

from longred_bench.errors import UserError
from longred_bench.metrics.correlation import bootstrap_spearman_ci
from longred_bench.metrics.stats import Interval
from longred_bench.reports.fig2_report import (
    MIN_MODELS,
    collect_points,
    fig2_verdicts,
    spearman_label,
)
from longred_bench.reports.verdict_rules import (
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    REPRODUCED,
    UNDECIDED,
)

TASK = "longred_tiny_swap"


def _records(
    series: str, ext: str | None, docs: list[float], similarity: float | None, items: bool = True
) -> list:
    """One model: its short task's per-document scores ``docs`` (0-1; the tidy score is their
    mean) and, for an extended model, its drift summary over two texts."""
    row = "original" if ext is None else series
    labels = {"row": row, "extension": ext, "seed": 0, "series": series}
    out = [{"kind": "eval", "suite": "short_tiny", "task": TASK, "metric": "acc,none",
            "value": float(np.mean(docs)), "n_samples": len(docs), **labels}]  # fmt: skip
    if items:
        out += [{"kind": "eval_item", "suite": "short_tiny", "task": TASK, "metric": "acc,none",
                 "doc_id": i, "value": v, **labels} for i, v in enumerate(docs)]  # fmt: skip
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


def _series(pairs, series="cpt", docs=None, items=True):
    """The original (0.8 on 20 documents) and a model per (similarity, score) pair, its
    documents all at ``score`` / 100, or ``docs(i, score)``."""
    records = _records("original", None, [0.8] * 20, None, items)
    for i, (sim, score) in enumerate(pairs):
        values = [score / 100] * 20 if docs is None else docs(i, score)
        records += _records(series, f"abf:theta={i + 2}e6", values, sim, items)
    return records


def _verdict(records):
    points, _, _, original = collect_points(records)
    return fig2_verdicts(points, original)[0]


RISING = [(0.80 + 0.015 * i, 50.0 + 2 * i) for i in range(13)]


def test_points_are_retention_against_similarity():
    points, base, _, original = collect_points(_series([(0.99, 76.0), (0.95, 60.0),
                                                        (0.90, 40.0)]))  # fmt: skip
    assert base == pytest.approx(80.0)
    assert [round(p.retention, 3) for p in points] == [0.95, 0.75, 0.5]
    assert points[0].similarity.low == pytest.approx(0.989)
    assert len(original["all"][TASK]) == 20 and points[0].texts == {0: 0.989, 1: 0.991}


def test_rule_reaches_every_label():
    falling = [(s, 100.0 - v) for s, v in RISING]
    good = _verdict(_series(RISING))
    assert good.label == REPRODUCED and "the 2 drift texts" in good.ours
    assert _verdict(_series(falling)).label == NOT_REPRODUCED
    few = _verdict(_series(RISING[:5]))
    assert few.label == NOT_COMPARABLE and "over 5 models" in few.ours and "floor" in few.ours
    assert spearman_label(Interval(0.2, -0.1, 0.5), 13) == UNDECIDED
    nan = float("nan")
    assert spearman_label(Interval(nan, nan, nan), 13) == NOT_COMPARABLE
    assert spearman_label(Interval(0.3, nan, nan), 13) == NOT_COMPARABLE
    assert spearman_label(None, 13) == NOT_COMPARABLE
    # the floor is MIN_MODELS models: at it the interval is judged, below it not
    assert spearman_label(Interval(0.5, 0.2, 0.8), MIN_MODELS) == REPRODUCED
    assert spearman_label(Interval(0.5, 0.2, 0.8), MIN_MODELS - 1) == NOT_COMPARABLE


def test_undefined_rho_is_the_floor_not_undecided():
    """Every model retaining the same: no ranking, so no label but not comparable."""
    flat = _verdict(_series([(s, 80.0) for s, _ in RISING]))
    assert flat.label == NOT_COMPARABLE and "rho undefined" in flat.ours
    assert "rho undefined (one side constant)" in flat.rule and "-> not comparable" in flat.rule


def test_documents_resampled_widen_the_interval_to_undecided():
    """Retention rising by 2.5 points a model, but each model right on its own random subset
    of 20 documents: resampling the models alone calls it reproduced, resampling the documents
    too cannot tell."""
    rng = np.random.default_rng(0)

    def binary(i: int, score: float) -> list[float]:
        right = round(score / 100 * 20)
        return list(rng.permutation([1.0] * right + [0.0] * (20 - right)))

    points, _, _, original = collect_points(_series(RISING, docs=binary))
    models_only = bootstrap_spearman_ci([p.similarity.estimate for p in points],
                                        [p.retention for p in points])  # fmt: skip
    assert models_only.low > 0
    [verdict] = fig2_verdicts(points, original)
    assert verdict.label == UNDECIDED and "20 documents" in verdict.ours


def test_no_per_document_scores_is_not_comparable():
    verdict = _verdict(_series(RISING, items=False))
    assert verdict.label == NOT_COMPARABLE and "no per-document" in verdict.ours


def test_the_original_is_required():
    records = [r for r in _series([(0.9, 50.0)] * 3) if r["row"] != "original"]
    with pytest.raises(UserError, match="original model"):
        collect_points(records)


def test_rho_undefined_in_most_resamples_is_the_floor_too():
    """One model differs in similarity, another in retention: rho is defined on the data, but a
    resample misses one of the two more often than not."""
    pairs = [(0.95 if i == 0 else 0.90, 70.0 if i == 1 else 60.0) for i in range(13)]
    verdict = _verdict(_series(pairs))
    assert verdict.label == NOT_COMPARABLE
    assert "undefined in more than half of the resamples" in verdict.ours
    few = _verdict(_series(pairs[:4]))
    assert few.label == NOT_COMPARABLE and "Fewer than 12 models" in few.ours
