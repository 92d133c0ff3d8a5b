"""PSA's verdict (:func:`~longred_bench.reports.psa_report.psa_verdicts`) on the top-k share's
*interval*, not its estimate: a share above (or below) one half whose interval still holds one
half decides nothing; and a gold rank equal to k is in the top k."""

from __future__ import annotations

from longred_bench.reports.psa_report import psa_verdicts, sample_frame, summarize
from longred_bench.reports.verdict_rules import REPRODUCED, UNDECIDED


def _rows(extension: str, length: int, ranks: list[int]) -> list[dict]:
    return [{"kind": "psa_sample", "extension": extension, "task": "niah_single_2",
             "length": length, "rank": r, "probability": 1.0 / r, "reciprocal_rank": 1.0 / r,
             "mean_reciprocal_rank_all": 1.0 / r, "needle_depth": 50.0,
             "needle_distance": length // 2, "beyond_window": False}
            for r in ranks]  # fmt: skip


def _verdicts(records: list[dict]) -> dict:
    by_length = summarize(sample_frame(records), ["extension", "length"], top_k=10)
    return {v.extension: v for v in psa_verdicts(by_length, top_k=10)}


def test_the_top_k_share_decides_only_where_its_interval_clears_one_half() -> None:
    records = _rows("mostly", 512, [1] * 8) + _rows("mostly", 2048, [2, 2, 2, 20] * 2)
    records += _rows("seldom", 512, [1] * 8) + _rows("seldom", 2048, [2, 20, 20, 20] * 2)
    verdicts = _verdicts(records)
    # 6 of 8 in the top 10 (share 0.75), its interval reaching below 1/2: not "stays".
    mostly = verdicts["mostly"]
    assert mostly.salience_falls and mostly.worst_share["top_k_share"] == 0.75
    assert mostly.worst_share["top_k_share_low"] <= 0.5
    assert (mostly.stays_top_k, mostly.leaves_top_k, mostly.label) == (False, False, UNDECIDED)
    # 2 of 8 (share 0.25), its interval reaching above 1/2: not "leaves" either.
    seldom = verdicts["seldom"]
    assert seldom.worst_share["top_k_share"] == 0.25
    assert seldom.worst_share["top_k_share_high"] >= 0.5
    assert (seldom.stays_top_k, seldom.leaves_top_k, seldom.label) == (False, False, UNDECIDED)


def test_a_gold_rank_of_k_is_in_the_top_k() -> None:
    records = _rows("edge", 512, [1] * 6) + _rows("edge", 2048, [10] * 6)
    edge = _verdicts(records)["edge"]
    assert edge.worst_share["top_k_share"] == 1.0
    assert (edge.stays_top_k, edge.label) == (True, REPRODUCED)
