"""``longred_bench.metrics.retention.common_documents`` cuts every side to the (group, member,
document) keys all sides have, whichever side lists a member the others lack."""

from __future__ import annotations

from longred_bench.metrics.retention import common_documents, common_retention


def test_a_member_only_the_first_side_has_is_left_out() -> None:
    a = {"General": {"cloze": {0: 1.0, 1: 0.0}, "only_a": {0: 1.0}}}
    b = {"General": {"cloze": {0: 0.5, 1: 0.5}}}
    (ca, cb), n = common_documents(a, b)
    assert n == 2
    assert ca == {"General": {"cloze": {0: 1.0, 1: 0.0}}}
    assert cb == {"General": {"cloze": {0: 0.5, 1: 0.5}}}
    assert common_retention(a, b) == (1.0, 2)
