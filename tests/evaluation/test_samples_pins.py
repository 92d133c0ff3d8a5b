"""Logged documents on disk (``evaluation.samples``): the files and ``run.json`` a run
writes, which earlier files a later run keeps or sets aside and under what name, and how the
files read back."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from longred_bench.evaluation.samples import (
    keep_samples,
    read_samples,
    sample_records,
    set_aside,
    write_samples,
)


def test_a_documents_record_takes_its_fields_from_its_first_entry() -> None:
    """Entries of one document under several filters merge into one record whose prompt,
    responses and hashes are those of the first entry; tasks come sorted."""
    first = {"doc_id": "2", "filter": "none", "metrics": ["acc"], "acc": 1.0,
             "arguments": ["first"], "resps": ["r1"], "target": "t", "doc_hash": "h1"}  # fmt: skip
    later = {**first, "filter": "f", "arguments": ["later"], "resps": ["r2"], "doc_hash": "h2"}
    records = sample_records({"z": [first, later], "a": []}, decoding="greedy")
    assert list(records) == ["a", "z"]
    (record,) = records["z"]
    assert record["doc_id"] == 2
    assert (record["arguments"], record["resps"], record["doc_hash"]) == (["first"], ["r1"], "h1")
    assert record["prompt_hash"] is None and record["target_hash"] is None
    assert record["metrics"] == {"acc": 1.0, "acc,f": 1.0}


def test_files_are_gzipped_utf8_json_lines(tmp_path: Path) -> None:
    """Each record is one JSON line, non-ASCII text written as itself, in a gzip file; blank
    lines are skipped when read back."""
    records = {"t": [{"doc_id": 0, "target": "café"}, {"doc_id": 1}]}
    path = write_samples(tmp_path, records, run="r")["t"]
    raw = gzip.decompress(path.read_bytes()).decode("utf-8")
    assert raw == '{"doc_id": 0, "target": "café"}\n{"doc_id": 1}\n'
    with gzip.open(path, "at", encoding="utf-8") as fh:
        fh.write("\n  \n")
    assert list(read_samples(path)) == records["t"]


def test_files_set_aside_are_named_by_the_first_12_characters_of_their_run(
    tmp_path: Path,
) -> None:
    """The folder of an earlier run's files is ``earlier-`` and the first 12 characters of its
    key; ``run.json`` goes with them only once no file of it is left in place."""
    folder = tmp_path / "samples"
    write_samples(tmp_path, {"a": [{}], "b": [{}]}, run="0123456789abcdef")
    aside = set_aside(tmp_path, [folder / "a.jsonl.gz"])
    assert aside == folder / "earlier-0123456789ab"
    assert (folder / "run.json").is_file() and not (aside / "run.json").exists()
    assert sorted(p.name for p in aside.iterdir()) == ["a.jsonl.gz"]
    assert set_aside(tmp_path, [folder / "b.jsonl.gz"]) == aside
    assert sorted(p.name for p in aside.iterdir()) == ["a.jsonl.gz", "b.jsonl.gz", "run.json"]
    assert not (folder / "run.json").exists()


def test_an_unreadable_run_file_names_no_run(tmp_path: Path) -> None:
    """A ``run.json`` that is not JSON, or not an object, names no run: the files are set
    aside as ``unrecorded`` and the file stays where it was."""
    folder = tmp_path / "samples"
    for text, kept in (("{not json", "{not json"), ('["r1"]', '["r1"]')):
        write_samples(tmp_path, {"a": [{}]}, run="r1")
        (folder / "run.json").write_text(text)
        assert keep_samples(tmp_path, run="r1") == ({}, folder / "earlier-unrecorded")
        assert (folder / "run.json").read_text() == kept
        (folder / "run.json").unlink()


def test_kept_files_without_a_recorded_count_are_counted(tmp_path: Path) -> None:
    """The same run keeps its files; a file whose count ``run.json`` lacks is counted by its
    records."""
    folder = tmp_path / "samples"
    write_samples(tmp_path, {"a": [{}, {}, {}], "b": [{}]}, run="r1")
    data = json.loads((folder / "run.json").read_text())
    del data["documents"]["a.jsonl.gz"]
    (folder / "run.json").write_text(json.dumps(data))
    kept, aside = keep_samples(tmp_path, run="r1")
    assert aside is None
    assert kept == {folder / "a.jsonl.gz": 3, folder / "b.jsonl.gz": 1}
    del data["documents"]
    (folder / "run.json").write_text(json.dumps(data))
    assert keep_samples(tmp_path, run="r1")[0] == kept


def test_a_rewrite_replaces_the_same_tasks_files(tmp_path: Path) -> None:
    """A later run writing the same tasks replaces their files in place (nothing set aside)
    and records its own key and counts."""
    folder = tmp_path / "samples"
    write_samples(tmp_path, {"a": [{}, {}]}, run="r1")
    write_samples(tmp_path, {"a": [{"doc_id": 9}]}, run="r2")
    assert sorted(p.name for p in folder.iterdir()) == ["a.jsonl.gz", "run.json"]
    assert list(read_samples(folder / "a.jsonl.gz")) == [{"doc_id": 9}]
    assert json.loads((folder / "run.json").read_text()) == {
        "run": "r2", "documents": {"a.jsonl.gz": 1}
    }  # fmt: skip


def test_samples_are_written_under_an_output_folder_not_made_yet(tmp_path: Path) -> None:
    """Writing into an output folder that does not exist yet makes it."""
    out = tmp_path / "runs" / "new"
    paths = write_samples(out, {"t": [{"doc_id": 0}]}, run="r")
    assert list(read_samples(paths["t"])) == [{"doc_id": 0}]


def test_kept_counts_are_read_from_the_run_file(tmp_path: Path) -> None:
    """Where ``run.json`` records a file's document count, that count is reported without
    reading the file."""
    folder = tmp_path / "samples"
    write_samples(tmp_path, {"a": [{}, {}]}, run="r1")
    data = json.loads((folder / "run.json").read_text())
    data["documents"]["a.jsonl.gz"] = 7
    (folder / "run.json").write_text(json.dumps(data))
    (folder / "a.jsonl.gz").write_bytes(b"not gzip")
    assert keep_samples(tmp_path, run="r1") == ({folder / "a.jsonl.gz": 7}, None)
