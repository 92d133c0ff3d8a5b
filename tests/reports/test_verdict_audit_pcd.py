"""The PCD report's RULER claim per region of a line (:func:`~longred_bench.reports.pcd_report.
pcd_verdicts`): each region reads only its own lengths, and a region without lengths gets no
verdict."""

from __future__ import annotations

from longred_bench.reports.pcd_report import pcd_verdicts
from longred_bench.reports.verdict_rules import NOT_REPRODUCED, REPRODUCED


def _item(decoding: str, length: int, doc: int, value: float) -> dict:
    return {"kind": "eval_item", "part": "ruler", "line": "x", "decoding": decoding,
            "metric": "score", "task": "vt", "length": length, "doc_id": doc, "value": value,
            "max_position_embeddings": 1024}  # fmt: skip


def _ruler(records: list[dict]) -> dict[str, str]:
    return {v[1]: v[2] for v in pcd_verdicts(records, top_k=10) if v[0] == "ruler"}


def _region(length: int, greedy: float, pcd: float) -> list[dict]:
    return [_item(d, length, i, v + (i % 2)) for d, v in (("greedy", greedy), ("pcd", pcd))
            for i in range(8)]  # fmt: skip


def test_each_region_reads_only_its_own_lengths() -> None:
    # PCD gains 50 points within the window (at 512 and at 1024, the window itself) and loses
    # 50 beyond it (4096): one label each, not both read off all three lengths.
    records = _region(512, 20.0, 70.0) + _region(1024, 20.0, 70.0) + _region(4096, 70.0, 20.0)
    assert _ruler(records) == {
        "x, within its window (1024)": REPRODUCED,
        "x, beyond its window (1024)": NOT_REPRODUCED,
    }


def test_a_region_without_lengths_gets_no_verdict() -> None:
    assert _ruler(_region(512, 20.0, 70.0)) == {"x, within its window (1024)": REPRODUCED}
    assert _ruler(_region(4096, 20.0, 70.0)) == {"x, beyond its window (1024)": REPRODUCED}
