"""A reproduced table's records are written gzip-compressed, byte-for-byte reproducibly, replace
an older uncompressed copy, and read back as the records written (as does a plain JSONL file)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from longred_bench.results import read_records, write_jsonl, write_table_records

RECORDS = [
    {"kind": "eval", "row": "cpt", "value": 0.5, "item_scores": [1, 0, 1]},
    {"kind": "eval", "row": "longred-c", "value": 0.25, "provenance": {"seed": 0}},
]


def test_table_records_round_trip_compressed(tmp_path: Path) -> None:
    path = write_table_records(tmp_path, "table3", RECORDS)
    assert path == tmp_path / "table3.jsonl.gz"
    raw = path.read_bytes()
    assert raw[:2] == b"\x1f\x8b"  # gzip magic
    assert raw[4:8] == b"\x00" * 4 and raw[9] == 255  # no time, no operating system
    assert read_records(path) == RECORDS
    lines = gzip.decompress(raw).decode().splitlines()
    assert [json.loads(x) for x in lines] == RECORDS


def test_same_records_give_the_same_bytes(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = write_table_records(tmp_path / "a", "t", RECORDS)
    b = write_table_records(tmp_path / "b", "t", RECORDS)
    assert a.read_bytes() == b.read_bytes()
    c = write_table_records(tmp_path / "a", "t", RECORDS[:1])
    assert c.read_bytes() != b.read_bytes()


def test_older_uncompressed_records_are_replaced(tmp_path: Path) -> None:
    old = write_jsonl(tmp_path / "table1.jsonl", [{"kind": "old"}])
    other = write_jsonl(tmp_path / "table3.jsonl", [{"kind": "other table"}])
    write_table_records(tmp_path, "table1", RECORDS)
    assert not old.exists()
    assert other.exists()  # another table's records stay
    assert read_records(tmp_path / "table1.jsonl.gz") == RECORDS


def test_plain_jsonl_still_reads(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "r.jsonl", RECORDS)
    assert path.read_text().count("\n") == 2
    assert read_records(path) == RECORDS
