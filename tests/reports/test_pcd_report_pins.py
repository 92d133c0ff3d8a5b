"""What the PCD report's verdicts read: per-sample RULER scores kept apart by length (the same
sample ids recur at every length), only the metric asked for, and the PSA claim from greedy
decoding's samples alone."""

from __future__ import annotations

from longred_bench.reports.pcd_report import items, pcd_verdicts


def _item(decoding: str, doc: int, value: float, length: int | None = 4096, **kw) -> dict:
    return {"kind": "eval_item", "part": "ruler", "line": "x", "decoding": decoding,
            "metric": "score", "task": "vt", "length": length, "doc_id": doc,
            "value": value, **kw}  # fmt: skip


def test_ruler_items_keep_each_length_apart() -> None:
    """Sample 0 at 1,024 and sample 0 at 4,096 are two samples, not one overwritten."""
    recs = [_item("greedy", i, 10.0 * n, n) for n in (1024, 4096) for i in range(3)]
    got = items(recs, "ruler", "x", "greedy", "score")
    assert got == {
        "vt": {1024: {i: 10240.0 for i in range(3)}, 4096: {i: 40960.0 for i in range(3)}}
    }


def test_items_take_only_the_metric_asked_for() -> None:
    """A short task's ``acc_norm`` records do not replace its ``acc`` scores (in points)."""
    recs = [_item("greedy", i, 1.0, None, part="short", metric="acc") for i in range(3)]
    recs += [_item("greedy", i, 0.0, None, part="short", metric="acc_norm") for i in range(3)]
    assert items(recs, "short", "x", "greedy", "acc") == {
        "vt": {"acc": {0: 100.0, 1: 100.0, 2: 100.0}}
    }


def _psa(decoding: str, length: int, rank: int) -> list[dict]:
    return [{"kind": "psa_sample", "part": "psa", "decoding": decoding, "line": "x",
             "extension": "abf:theta=2e6", "task": "niah_single_2", "length": length,
             "rank": rank, "probability": 1.0 / rank, "reciprocal_rank": 1.0 / rank,
             "mean_reciprocal_rank_all": 1.0 / rank, "needle_depth": 50.0,
             "needle_distance": length // 2, "beyond_window": False}
            for _ in range(8)]  # fmt: skip


def test_the_psa_claim_reads_greedy_decoding_only() -> None:
    """Greedy's gold token ranks first at both lengths (salience 1.000); PCD's samples (rank 4,
    salience 0.250) are not part of the claim, which is about greedy decoding."""
    recs = _psa("greedy", 512, 1) + _psa("greedy", 2048, 1)
    recs += _psa("pcd", 512, 4) + _psa("pcd", 2048, 4)
    [(line, text)] = [(v[1], v[3]) for v in pcd_verdicts(recs, top_k=10) if v[0] == "psa"]
    assert line == "x"
    assert text.startswith("S first 1.000 at 512 -> 1.000 at 2048")
