"""Figure 2's rule (:func:`~longred_bench.reports.fig2_report.fig2_verdicts`) at its lower
edge: a series of fewer than 3 models gets no verdict at all; at 3 it gets a "not comparable"
one that names the floor; at exactly :data:`MIN_MODELS` it is judged without that note. The
drift texts resampled are those every model of the series has."""

from __future__ import annotations

from longred_bench.reports.fig2_report import MIN_MODELS, collect_points, fig2_verdicts
from longred_bench.reports.verdict_rules import NOT_COMPARABLE, REPRODUCED

TASK = "longred_tiny_swap"
FLOOR_TEXT = f"Fewer than {MIN_MODELS} models: below the figure's floor."


def _records(series: str, ext: str | None, score: float, similarity: float | None) -> list:
    """One model: 20 documents of its short task at ``score`` (0-1) and, for an extended model,
    its drift summary over two texts."""
    labels = {"row": "original" if ext is None else series, "extension": ext, "seed": 0,
              "series": series}  # fmt: skip
    out = [{"kind": "eval", "suite": "short_tiny", "task": TASK, "metric": "acc,none",
            "value": score, "n_samples": 20, **labels}]  # fmt: skip
    out += [{"kind": "eval_item", "suite": "short_tiny", "task": TASK, "metric": "acc,none",
             "doc_id": i, "value": score, **labels} for i in range(20)]  # fmt: skip
    if similarity is not None:
        out.append({"kind": "drift_summary", "mean_hidden_cosine": similarity,
                    "text_hidden_cosine": [similarity - 0.001, similarity + 0.001],
                    **labels})  # fmt: skip
    return out


def _verdicts(models: int, extra_text: bool = False) -> list:
    records = _records("original", None, 0.8, None)
    for i in range(models):
        records += _records("cpt", f"abf:theta={i + 2}e6", 0.5 + 0.02 * i, 0.8 + 0.015 * i)
    if extra_text:  # the last model measured a third text the others did not
        records[-1]["text_hidden_cosine"] = [*records[-1]["text_hidden_cosine"], 0.5]
    points, _, _, original = collect_points(records)
    return fig2_verdicts(points, original)


def test_a_series_of_two_models_gets_no_verdict() -> None:
    assert _verdicts(2) == []
    [three] = _verdicts(3)
    assert three.label == NOT_COMPARABLE
    assert FLOOR_TEXT in three.ours


def test_a_series_at_the_floor_is_judged_without_the_floor_note() -> None:
    [at] = _verdicts(MIN_MODELS)
    assert at.label == REPRODUCED  # retention rises with similarity, model by model
    assert FLOOR_TEXT not in at.ours
    [below] = _verdicts(MIN_MODELS - 1)
    assert below.label == NOT_COMPARABLE and FLOOR_TEXT in below.ours


def test_only_the_texts_every_model_has_are_resampled() -> None:
    [verdict] = _verdicts(MIN_MODELS, extra_text=True)
    assert verdict.label == REPRODUCED
    assert "; the 2 drift texts)." in verdict.ours
