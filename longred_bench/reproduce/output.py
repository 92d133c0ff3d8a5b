"""What a ``reproduce`` call leaves behind: its records as ``NAME.jsonl.gz`` and the report its
builder writes from them, with the command and wall time of the call."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def write_outputs(
    name: str,
    build: Callable[..., list[Path]],
    records: list[dict[str, Any]],
    out: Path,
    *,
    profile: str,
    command: str,
    wall_seconds: float,
    wall_note: str,
) -> list[Path]:
    """Write ``out/NAME.jsonl.gz`` and the report ``build(records, out, ...)`` writes (a report
    builder's protocol: ``profile``, ``command``, ``wall_seconds``, ``wall_note``); the paths
    written."""
    from longred_bench.results import write_table_records

    out.mkdir(parents=True, exist_ok=True)
    jsonl = write_table_records(out, name, records)
    paths = build(records, out, profile=profile, command=command, wall_seconds=wall_seconds,
                  wall_note=wall_note)  # fmt: skip
    return [*paths, jsonl]
