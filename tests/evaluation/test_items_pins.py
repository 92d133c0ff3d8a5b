"""Per-document scores (``evaluation.items``): which logged values become ``eval_item``
records and the SQuAD v2 scores of malformed or partial logged pairs."""

from __future__ import annotations

from typing import Any

import pytest
from eval_helpers import StandInTask

from longred_bench.evaluation.items import item_records, squad_scores


def mean(values: list[float]) -> float:  # named like lm-eval's mean aggregation
    return sum(values) / len(values)


def squad(values: list[Any]) -> float:  # a corpus-level aggregation, as SQuAD v2's
    return 0.0


def _squad_records(value: Any) -> list[dict[str, Any]]:
    tasks = {"sq": StandInTask({"exact": squad, "f1": squad}, "generate_until")}
    samples = {"sq": [{"doc_id": 4, "metrics": ["exact", "f1"], "exact": value, "f1": value}]}
    return item_records(samples, tasks, suite="s", model="m", rope=None)


@pytest.mark.parametrize(
    "value",
    [
        ("Paris", {"answers": {"text": ["Paris"]}}),  # the prediction is not a dict
        ({"prediction_text": "Paris"}, ["Paris"]),  # the reference is not a dict
        ({"text": "Paris"}, {"answers": {"text": ["Paris"]}}),  # no prediction_text
        ({"prediction_text": "Paris"},),  # not a pair
        None,
    ],
)
def test_a_malformed_squad_pair_gives_no_record(value: Any) -> None:
    """A logged SQuAD value that is not a ``(prediction dict with prediction_text, reference
    dict)`` pair is left out, not scored and not an error."""
    assert _squad_records(value) == []


def test_a_squad_pair_is_scored_per_document() -> None:
    """A well-formed pair gives its document's ``exact`` and ``f1`` in percent, against the
    best gold answer; a reference without answers is scored as unanswerable."""
    pair = ({"prediction_text": "the Eiffel tower"}, {"answers": {"text": ["Eiffel Tower!"]}})
    got = {r["metric"]: r["value"] for r in _squad_records(pair)}
    assert got == {"exact": 100.0, "f1": 100.0}
    pair = ({"prediction_text": "tower in Paris"}, {"answers": {"text": ["Eiffel tower", "x"]}})
    got = {r["metric"]: r["value"] for r in _squad_records(pair)}
    p, r = 1 / 3, 1 / 2
    assert got == {"exact": 0.0, "f1": pytest.approx(100 * 2 * p * r / (p + r))}
    empty = {r["metric"]: r["value"] for r in _squad_records(({"prediction_text": ""}, {}))}
    assert empty == {"exact": 100.0, "f1": 100.0}
    wrong = {r["metric"]: r["value"] for r in _squad_records(({"prediction_text": "x"}, {}))}
    assert wrong == {"exact": 0.0, "f1": 0.0}


def test_f1_counts_repeated_tokens_once_per_match() -> None:
    """Token F1 counts a token shared by prediction and gold as often as the fewer of the two
    hold it."""
    got = squad_scores("red red red car", ["red car car"])
    precision, recall = 2 / 4, 2 / 3
    assert got["exact"] == 0.0
    assert got["f1"] == pytest.approx(100 * 2 * precision * recall / (precision + recall))
