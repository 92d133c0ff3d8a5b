"""Retention and Short Avg over the documents two runs both scored
(``longred_bench.metrics.retention``: ``common_documents``, ``mean_of_means``,
``common_retention``)."""

from __future__ import annotations

import math

import pytest

from longred_bench.metrics.retention import common_documents, common_retention, mean_of_means


def test_common_documents_cut_every_side_to_the_shared_keys() -> None:
    a = {"General": {"cloze": {0: 1.0, 1: 0.0, 2: 1.0}}, "RC": {"nextsent": {0: 1.0}}}
    b = {"General": {"cloze": {1: 1.0, 2: 0.0, 3: 1.0}, "extra": {0: 1.0}}}
    (ca, cb), n = common_documents(a, b)
    assert n == 2
    assert ca == {"General": {"cloze": {1: 0.0, 2: 1.0}}}
    assert cb == {"General": {"cloze": {1: 1.0, 2: 0.0}}}
    assert common_documents(a, {"RC": {"nextsent": {9: 1.0}}}) == ([{}, {}], 0)


def test_mean_of_means_weights_groups_and_members_equally() -> None:
    items = {"g1": {"t1": {0: 1.0, 1: 0.0}, "t2": {0: 1.0}}, "g2": {"t3": {0: 0.0, 1: 0.0}}}
    # g1 = mean(0.5, 1.0) = 0.75; g2 = 0; total 0.375.
    assert mean_of_means(items) == pytest.approx(0.375)
    assert math.isnan(mean_of_means({}))


def test_retention_over_unequal_document_sets_uses_the_common_set() -> None:
    # The original skipped documents 190..199 (over its window); the extended run scored all 200
    # and got 1 on exactly those. Over the shared 190: 0.3 / 0.6 = 0.5. Over each run's own
    # documents it would be (57 + 10) / 200 / (114 / 190) = 0.558.
    original = {"General": {"cloze": {i: float(i < 114) for i in range(190)}}}
    extended = {"General": {"cloze": {i: float(i < 57 or i >= 190) for i in range(200)}}}
    ratio, n = common_retention(original, extended)
    assert n == 190 and ratio == pytest.approx(0.5)
    assert mean_of_means(extended) / mean_of_means(original) == pytest.approx(0.5583, abs=1e-4)


def test_retention_without_shared_documents_or_with_a_zero_original_is_nan() -> None:
    ratio, n = common_retention({"g": {"t": {0: 1.0}}}, {"g": {"t": {1: 1.0}}})
    assert math.isnan(ratio) and n == 0
    ratio, n = common_retention({"g": {"t": {0: 0.0}}}, {"g": {"t": {0: 1.0}}})
    assert math.isnan(ratio) and n == 1


def test_mean_of_means_skips_members_and_groups_without_documents() -> None:
    """A member with no document does not count, nor a group whose members have none (no
    ZeroDivisionError); with nothing left the mean is NaN."""
    items = {"g1": {"t1": {0: 1.0, 1: 0.0}, "t2": {}}, "g2": {"t3": {}}}
    assert mean_of_means(items) == pytest.approx(0.5)
    assert math.isnan(mean_of_means({"g": {"t": {}}}))


def test_common_documents_of_no_side_is_empty() -> None:
    assert common_documents() == ([], 0)


def test_an_empty_category_is_refused() -> None:
    """A category listing no benchmark is a UserError, not left out as if unevaluated."""
    from longred_bench.errors import UserError
    from longred_bench.metrics.retention import category_means

    with pytest.raises(UserError, match="category 'rc' has no benchmarks"):
        category_means({"arc": 0.5}, {"common": ["arc"], "rc": []})
