"""Figure 2's report as a reader sees it: the original's short score, each series' points by
falling similarity with score and retention, and each series' verdict over its own models
(documents, tasks and drift texts resampled named; the floor of 12 models said), and the short
score line naming what it averages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from report_helpers import PROV

from longred_bench.reports.fig2_report import (
    build_fig2,
    collect_points,
    fig2_verdicts,
    points_table,
)

TASK = "longred_tiny_swap"


def _model(series: str, ext: str | None, score: float, sim: float | None) -> list[dict[str, Any]]:
    """One model scoring ``score`` (0-1) on every one of 20 documents of one short task and,
    extended, its drift summary over two texts around ``sim``."""
    labels = {"row": "original" if ext is None else series, "extension": ext, "seed": 0,
              "series": series}  # fmt: skip
    common = {"suite": "short_tiny", "task": TASK, "metric": "acc,none", **labels}
    docs = [score] * 19 + [1.0]
    out = [{"kind": "eval", **common, "value": float(np.mean(docs)), "n_samples": 20}]
    out += [{"kind": "eval_item", **common, "doc_id": i, "value": v} for i, v in enumerate(docs)]
    if sim is not None:
        out.append({"kind": "drift_summary", "mean_hidden_cosine": sim,
                    "text_hidden_cosine": [sim - 0.001, sim + 0.001], **labels})  # fmt: skip
    return out


def _records() -> list[dict[str, Any]]:
    out = _model("original", None, 0.8, None)
    for i, (sim, score) in enumerate([(0.90, 0.4), (0.99, 0.7), (0.95, 0.6)]):
        out += _model("cpt", f"abf:theta={i + 2}e6", score, sim)
    for i, (sim, score) in enumerate([(0.85, 0.3), (0.88, 0.5), (0.80, 0.2), (0.83, 0.1)]):
        out += _model("zero-shot", f"pi:factor={i + 2}", score, sim)
    return out


def test_points_are_listed_per_series_by_falling_similarity() -> None:
    points, base, _, _ = collect_points(_records())
    lines = points_table(points, base)
    assert lines[0] == "Original model: short score 81.00."
    rows = [line for line in lines if line.startswith("| after long-only CPT |")]
    assert rows == [
        "| after long-only CPT | `abf:theta=3e6` | 0.9900 [0.9890, 0.9910] | 71.50 | 0.883 |",
        "| after long-only CPT | `abf:theta=4e6` | 0.9500 [0.9490, 0.9510] | 62.00 | 0.765 |",
        "| after long-only CPT | `abf:theta=2e6` | 0.9000 [0.8990, 0.9010] | 43.00 | 0.531 |",
    ]


def test_each_series_verdict_counts_its_own_models_and_says_what_was_resampled() -> None:
    points, _, _, original = collect_points(_records())
    zero_shot, cpt = fig2_verdicts(points, original)
    assert zero_shot.scope == "zero-shot extensions" and cpt.scope == "after long-only CPT"
    assert "over 4 models (" in zero_shot.ours and "over 3 models (" in cpt.ours
    assert (
        "their documents: 20 documents of 1 short task(s) that every model and the original "
        "scored; the 2 drift texts). Fewer than 12 models: below the figure's floor."
    ) in cpt.ours


def test_the_trained_series_says_its_models_are_one_run_each() -> None:
    """Each CPT point is the seed-0 run: the verdict says its interval has no seed variance;
    the zero-shot series, which trains nothing, says nothing of seeds."""
    points, _, _, original = collect_points(_records())
    zero_shot, cpt = fig2_verdicts(points, original)
    assert cpt.ours.endswith(
        "Each model is one training run (seed 0): the interval holds no variance over training "
        "seeds."
    )
    assert "seed" not in zero_shot.ours


def test_the_short_score_line_names_the_task_it_averages(tmp_path: Path) -> None:
    records = [{**r, "provenance": PROV} for r in _records()]
    md = build_fig2(records, tmp_path, profile="tiny", command="c")[0].read_text()
    assert (
        "- Short score: the mean of `longred_tiny_swap`; retention = score / the original's." in md
    )


def test_the_short_score_leaves_the_passkey_out_as_every_short_average_does(tmp_path) -> None:
    """Where no whole short-task category was scored, the short score fell back to every task
    the runs scored, the passkey (a long-context probe, in no category) included."""
    passkey = [
        {**r, "task": "longred_tiny_passkey", "value": 0.0}
        for r in _records()
        if r["kind"] == "eval"
    ]
    records = [{**r, "provenance": PROV} for r in _records() + passkey]
    md = build_fig2(records, tmp_path, profile="tiny", command="c")[0].read_text()
    assert "Original model: short score 81.00." in md
    assert "- Short score: the mean of `longred_tiny_swap`; retention" in md
