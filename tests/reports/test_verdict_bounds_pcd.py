"""The PCD report's rules (:mod:`longred_bench.reports.pcd_report`) at the edges the other PCD
tests leave open: the RULER floor needs both decodings below it, its evidence names each
decoding's own mean, a length equal to the line's window lies within it; the short claim states
its documents."""

from __future__ import annotations

from longred_bench.metrics.stats import Interval
from longred_bench.reports.pcd_report import pcd_verdicts, regions, ruler_verdict
from longred_bench.reports.verdict_rules import NOT_COMPARABLE, NOT_REPRODUCED, REPRODUCED


def _item(decoding: str, doc: int, value: float, length: int = 4096) -> dict:
    return {"kind": "eval_item", "part": "ruler", "line": "x", "decoding": decoding,
            "metric": "score", "task": "vt", "length": length, "doc_id": doc,
            "value": value}  # fmt: skip


def test_the_floor_needs_both_decodings_below_it() -> None:
    # Greedy at 10 points, PCD at 2: PCD fell under the floor, greedy did not -> judged.
    label, text = ruler_verdict(Interval(-8.0, -9.0, -7.0), 64, 10.0, 2.0)
    assert label == NOT_REPRODUCED and "below the floor" not in text


def test_the_floor_evidence_names_each_decodings_mean() -> None:
    recs = [_item("greedy", i, 2.0 * (i % 2)) for i in range(40)]  # mean 1
    recs += [_item("pcd", i, 6.0 * (i % 2)) for i in range(40)]  # mean 3
    [(label, text)] = [(v[2], v[3]) for v in pcd_verdicts(recs, top_k=10) if v[0] == "ruler"]
    assert label == NOT_COMPARABLE
    assert text.startswith("greedy 1.0, PCD 3.0: both below the floor")


def test_a_length_equal_to_the_window_is_within_it() -> None:
    recs = [{**_item("greedy", 0, 1.0, n), "max_position_embeddings": 2048}
            for n in (1024, 2048, 4096)]  # fmt: skip
    assert regions(recs, "x") == [
        ("within its window (2048)", {1024, 2048}),
        ("beyond its window (2048)", {4096}),
    ]


def test_the_short_claim_states_its_paired_documents() -> None:
    recs = [{**_item(d, i, 1.0, None), "part": "short", "metric": "acc"}
            for d in ("greedy", "pcd") for i in range(30)]  # fmt: skip
    [(label, text)] = [(v[2], v[3]) for v in pcd_verdicts(recs, top_k=10) if v[0] == "short"]
    assert label == REPRODUCED
    assert text.endswith("(95% paired, n=30 documents)")
