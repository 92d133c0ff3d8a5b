"""Per-document SQuAD v2 scores and per-document records
(``longred_bench.evaluation.items``) at their edges: answers are normalised as SQuAD does
(punctuation removed before the articles ``a``/``an``/``the``), a gold answer that normalises
to nothing is not an answer, exact match is the best over the answers, token F1 counts a
repeated token as often as both sides have it, and a generation task's record keeps the first
response of the first repeat."""

from __future__ import annotations

from typing import Any

import pytest

from longred_bench.evaluation.items import item_records, squad_scores


@pytest.mark.parametrize(
    ("prediction", "answers", "exact", "f1"),
    [
        ("a cat", ["cat"], 100.0, 100.0),  # "a" is an article too
        ("a-b", ["ab"], 100.0, 100.0),  # punctuation goes first: "a-b" is the word "ab"
        ("", ["the", "cat"], 0.0, 0.0),  # "the" is no answer: only "cat" counts
        ("Paris", ["Paris", "London"], 100.0, 100.0),  # the best answer, not the last
        ("cat cat", ["cat cat dog"], 0.0, 80.0),  # 2 shared: precision 1, recall 2/3
        ("cat cat dog", ["cat dog"], 0.0, 80.0),  # 2 shared: precision 2/3, recall 1
    ],
)
def test_squad_v2_scores_at_the_edges(prediction, answers, exact, f1) -> None:
    got = squad_scores(prediction, answers)
    assert got["exact"] == pytest.approx(exact) and got["f1"] == pytest.approx(f1)


class _Task:
    OUTPUT_TYPE = "generate_until"

    def aggregation(self) -> dict[str, Any]:
        def mean(values: list[float]) -> float:  # named like lm-eval's mean aggregation
            return sum(values) / len(values)

        return {"exact_match": mean}


def test_a_generation_record_keeps_the_first_response_of_the_first_repeat() -> None:
    sample = {"doc_id": 0, "filter": "none", "metrics": ["exact_match"], "exact_match": 1.0,
              "resps": [[" 42", " 41"], [" 40"]], "target": "42"}  # fmt: skip
    (record,) = item_records({"gen": [sample]}, {"gen": _Task()}, suite="s", model="m", rope=None)
    assert record["response"] == " 42" and record["target"] == "42"
