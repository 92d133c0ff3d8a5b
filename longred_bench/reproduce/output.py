"""What a ``reproduce`` call leaves behind: its records as ``NAME.jsonl.gz`` and the report its
builder writes from them, with the command and wall time of the call; and the report rebuilt
from such records with this version's rules (``--rebuild``), computing nothing."""

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


def rebuild_outputs(
    name: str, build: Callable[..., list[Path]] | None, out: Path, *, profile: str, command: str
) -> list[Path]:
    """Write the report of table ``name`` again from ``out/NAME.jsonl.gz``, the records an
    earlier call wrote, with the rules of the code that runs now; the records stay as they are
    (their provenance names the code that computed them) and the report's call line says it
    was rebuilt, by which commit and source. The paths written."""
    import time

    from longred_bench.errors import UserError
    from longred_bench.reports import SHORT_HASH
    from longred_bench.results import read_records
    from longred_bench.source_tree import source_state

    if build is None:
        raise UserError(f"{name} writes its own outputs, not a report built from records: run "
                        "it again without --rebuild (its cached units are reused)")  # fmt: skip
    path = out / f"{name}.jsonl.gz"
    if not path.is_file():
        raise UserError(f"no records to rebuild {name} from: {path} does not exist (run "
                        f"`longred-bench reproduce {name} --profile {profile}` first, or give "
                        "--out the folder that holds them)")  # fmt: skip
    start = time.perf_counter()
    records = read_records(path)
    if not records:
        raise UserError(f"{path} holds no records: run the table again without --rebuild")
    state = source_state()
    source = state.source_hash[:SHORT_HASH]
    note = (f"report rebuilt from the records in `{path.name}`, computing nothing, by commit "
            f"{state.label} (source `{source}`); the records name the code that computed "
            "them")  # fmt: skip
    return build(records, out, profile=profile, command=command,
                 wall_seconds=time.perf_counter() - start, wall_note=note)  # fmt: skip
