"""Scoring of generated answers, pinned down at its edges: RULER's whole-word match
(``longred_bench.taskdata.ruler.scoring``) is blocked only by an adjoining letter or digit (an
underscore does not block it) and takes a reference literally (regex characters included);
``score_any`` without references is refused; a logged NIAH sample without a score is scored on
its first response only (``longred_bench.taskdata.niah_grid.niah_cells``)."""

from __future__ import annotations

import pytest

from longred_bench.taskdata.niah_grid import niah_cells
from longred_bench.taskdata.ruler.scoring import score_all, score_any


def test_an_underscore_next_to_a_reference_does_not_block_a_whole_word_match() -> None:
    assert score_any("see item_2", ["2"], whole_words=True) == 100.0
    assert score_any("see 2_b", ["2"], whole_words=True) == 100.0
    assert score_any("see item2", ["2"], whole_words=True) == 0.0
    assert score_any("see 2b", ["2"], whole_words=True) == 0.0


def test_a_reference_is_matched_literally_not_as_a_pattern() -> None:
    assert score_any("version 3x5 only", ["3.5"], whole_words=True) == 0.0
    assert score_any("version 3.5 only", ["3.5"], whole_words=True) == 100.0
    assert score_any("I write C++ daily", ["c++"], whole_words=True) == 100.0
    assert score_any("the (a|b) case", ["a|b"], whole_words=True) == 100.0
    assert score_any("the a case", ["a|b"], whole_words=True) == 0.0
    assert score_all("I write c++ daily", ["C++", "d.ily"]) == 50.0


def test_scoring_without_references_is_refused() -> None:
    for whole_words in (False, True):
        with pytest.raises(ValueError, match="at least one reference"):
            score_any("anything", [], whole_words=whole_words)


def _unscored(response) -> dict:
    doc = {"length": 1024, "depth": 50.0, "outputs": ["1234567"]}
    return {"doc": doc, "filtered_resps": response}


def test_a_niah_sample_without_a_score_is_scored_on_its_first_response_only() -> None:
    samples = [
        _unscored([" I do not know.", " 1234567"]),  # two responses: the first one counts
        _unscored([[" I do not know.", " 1234567"]]),  # nested: the first of the first
        _unscored([[" It is 1234567."]]),
        _unscored([" It is 1234567."]),
    ]
    assert niah_cells(samples) == [
        {"kind": "niah", "length": 1024, "depth": 50.0, "score": 50.0, "n": 4}
    ]


def test_niah_cells_are_keyed_by_the_exact_depth() -> None:
    def logged(depth: float, score: float) -> dict:
        return {"doc": {"length": 2048, "depth": depth, "outputs": ["1"]}, "score": score}

    cells = niah_cells([logged(12.5, 100.0), logged(12.0, 0.0), logged(12.5, 0.0)])
    assert [(c["depth"], c["score"], c["n"]) for c in cells] == [(12.0, 0.0, 1), (12.5, 50.0, 2)]
