"""Per-document SQuAD v2 scores (:func:`longred_bench.evaluation.items.squad_scores`) at the
points where the official definition is easy to get wrong: the best of several gold answers,
a gold answer that normalises to nothing, the articles and case dropped, precision and recall
of unequal lengths."""

from __future__ import annotations

import pytest

from longred_bench.evaluation.items import squad_scores


def test_exact_match_is_the_best_over_the_gold_answers_in_any_order() -> None:
    for answers in (["Paris", "London"], ["London", "Paris"]):
        assert squad_scores("Paris", answers) == {"exact": 100.0, "f1": 100.0}


def test_a_gold_answer_that_normalises_to_nothing_is_not_an_answer() -> None:
    """As in the official script, a gold answer of only punctuation or articles is dropped: the
    question is answerable by its other answers, so an empty prediction scores 0."""
    assert squad_scores("", [".", "Paris"]) == {"exact": 0.0, "f1": 0.0}
    assert squad_scores("", ["the", "."]) == {"exact": 100.0, "f1": 100.0}  # none left


@pytest.mark.parametrize(
    ("prediction", "gold"),
    [("a Cat", "cat"), ("An apple", "apple"), ("THE END", "end"), ("Paris!", "paris")],
)
def test_case_articles_and_punctuation_do_not_count(prediction: str, gold: str) -> None:
    assert squad_scores(prediction, [gold])["exact"] == 100.0


def test_f1_weighs_precision_by_the_prediction_and_recall_by_the_gold() -> None:
    # 1 common token; precision 1/4, recall 1/1: F1 = 2 * 0.25 / 1.25 = 40
    assert squad_scores("red green blue Paris", ["Paris"])["f1"] == pytest.approx(40.0)
    # a word is an article only on its own: "another" stays, "an" goes
    assert squad_scores("another cat", ["an other cat"])["f1"] == pytest.approx(50.0)  # 1 of 2


def test_a_logged_squad_document_is_scored_against_every_gold_answer() -> None:
    from longred_bench.evaluation.items import _squad_value

    pair = ({"prediction_text": "Paris"}, {"answers": {"text": ["the city", "Paris"]}})
    assert _squad_value("f1", pair) == 100.0 and _squad_value("exact", pair) == 100.0
