"""What a ``reproduce`` call leaves behind: its records as ``NAME.jsonl.gz`` and the report its
builder writes from them, with the command and wall time of the call; and the report rebuilt
from such records with this version's rules (``--rebuild``), computing nothing."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

TRAINED = re.compile(r"/runs/train-[^/]+/final$")
"""The model of a record that evaluated a checkpoint the table trained (a run-cache folder)."""


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
    written. An earlier ``NAME.md`` there is removed first: a call stopped between the records
    and the report leaves no report beside records it was not built from (the same command, or
    ``--rebuild``, writes it)."""
    from longred_bench.results import write_table_records

    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.md").unlink(missing_ok=True)
    jsonl = write_table_records(out, name, records)
    paths = build(records, out, profile=profile, command=command, wall_seconds=wall_seconds,
                  wall_note=wall_note)  # fmt: skip
    return [*paths, jsonl]


def rebuild_outputs(
    name: str,
    build: Callable[..., list[Path]] | None,
    out: Path,
    *,
    profile: str,
    command: str,
    models: tuple[str, ...] = (),
    planned: Callable[[], set[tuple[Any, Any]]] | None = None,
) -> list[Path]:
    """Write the report of table ``name`` again from ``out/NAME.jsonl.gz`` (or an earlier
    version's uncompressed ``NAME.jsonl``), the records an earlier call wrote, with the rules of
    the code that runs now; the records stay as they are (their provenance names the code that
    computed them) and the report's call line says it was rebuilt, by which commit and source.
    ``models``: the names profile ``profile``'s model goes by; records of another model are
    refused (the report would name the wrong profile). ``planned``: the (row, extension) pairs
    the table's plan has at this profile; those the records lack are named on stderr and in the
    report's call line (the report leaves them out, and the verdicts that need them). The paths
    written."""
    import time

    from longred_bench.errors import UserError
    from longred_bench.reports import SHORT_HASH
    from longred_bench.source_tree import source_state

    if build is None:
        raise UserError(f"{name} writes its own outputs, not a report built from records: run "
                        "it again without --rebuild (its cached units are reused)")  # fmt: skip
    check_report_profile(out, name, profile)
    path = out / f"{name}.jsonl.gz"
    if not path.is_file() and (out / f"{name}.jsonl").is_file():
        path = out / f"{name}.jsonl"  # written by an earlier version, uncompressed
    if not path.is_file():  # the call that makes them: this one's, profile as given, less --rebuild
        first = command.replace(" --rebuild", "", 1)
        raise UserError(f"no records to rebuild {name} from: {path} does not exist (run "
                        f"`{first}` first, or give --out the folder that holds "
                        "them)")  # fmt: skip
    start = time.perf_counter()
    records = table_records(path, name)
    check_records_model(records, path, profile, models)
    state = source_state()
    source = state.source_hash[:SHORT_HASH]
    installed = state.label.removeprefix("no git checkout (").removesuffix(")")  # a wheel's
    by = f"commit {state.label}" if state.commit else f"{installed}, not a git checkout"
    note = (f"report rebuilt from the records in `{path.name}`, computing nothing, by {by} "
            f"(source `{source}`); the records name the code that computed them")  # fmt: skip
    missing = missing_rows(records, planned() if planned is not None else set())
    if missing:
        note += (f"; rows of the plan the records lack, left out with the verdicts that need "
                 f"them: {missing}")  # fmt: skip
        print(f"warning: {path} lacks rows of the plan: {missing}", file=sys.stderr, flush=True)
    return build(records, out, profile=profile, command=command,
                 wall_seconds=time.perf_counter() - start, wall_note=note)  # fmt: skip


def table_records(path: Path, name: str) -> list[dict[str, Any]]:
    """The records of ``path``, refused in one line when the file is damaged (cut short, not
    gzip, a line that is not JSON) or holds none."""
    from longred_bench.errors import UserError
    from longred_bench.results import read_records

    try:
        records = read_records(path)
    except (OSError, EOFError, ValueError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UserError(f"{path} does not read as records ({why}): copy it again from where it "
                        f"was made, or run {name} again without --rebuild (its cached units "
                        "are reused)") from None  # fmt: skip
    if not records:
        raise UserError(f"{path} holds no records: run the table again without --rebuild")
    return records


def check_records_model(
    records: list[dict[str, Any]], path: Path, profile: str, models: tuple[str, ...]
) -> None:
    """Refuse records none of which ran profile ``profile``'s model (``models``: the names it
    goes by), naming the models they ran and the built-in profiles of those models."""
    from longred_bench.errors import UserError

    ran = set()
    for r in records:
        config = (r.get("provenance") or {}).get("config") or {}
        ran |= {config[k] for k in ("model", "original") if isinstance(config.get(k), str)}
    ran = {m for m in ran if not TRAINED.search(m)}  # a checkpoint the table trained
    if not models or not ran or ran & set(models):
        return
    from longred_bench.profiles import BUILTIN, load_profile

    mine = [n for n in BUILTIN if {(m := load_profile(n).model).name, m.fallback} & ran]
    hint = f"--profile {' or '.join(mine)}" if mine else "the --profile they were made at"
    shown = ", ".join(sorted(ran)[:3])
    raise UserError(f"{path} holds records of {shown}, not of profile {profile}'s model "
                    f"{models[0]}: give {hint}")  # fmt: skip


def missing_rows(records: list[dict[str, Any]], planned: set[tuple[Any, Any]]) -> str:
    """The ``planned`` (row, extension) pairs no record of ``records`` has, in words (``""``:
    none, or records without rows)."""
    present = {(r.get("row"), r.get("extension")) for r in records if r.get("row") is not None}
    if not present:
        return ""
    gone = sorted((p for p in planned if p not in present), key=str)
    return ", ".join(f"{row} at {ext}" if ext else str(row) for row, ext in gone)


def planned_rows(name: str, profile: Any, options: dict[str, str]) -> set[tuple[Any, Any]]:
    """The (row, extension) pairs table ``name``'s plan measures at ``profile`` (none where it
    cannot be planned here)."""
    from longred_bench.reproduce.registry import get_spec

    try:
        ctx = get_spec(name).resolve(profile, progress=False, options=options)
        steps = get_spec(name).steps(ctx)
    except Exception:  # a plan that fails here loses the note only: the rebuild goes on
        return set()
    return {
        (s.labels["row"], s.labels.get("extension")) for s in steps if "row" in (s.labels or {})
    }


def check_report_profile(out: Path, table: str, profile: str) -> None:
    """Refuse an output folder whose ``TABLE.md`` is the report of another profile (its first
    line names it): the run replaced that report and its records without a word (``--out
    reports/smol`` at a copy of smol). The report of this profile, or none, passes."""
    from longred_bench.errors import UserError

    try:
        head = (out / f"{table}.md").read_text(encoding="utf-8").partition("\n")[0]
    except (OSError, UnicodeDecodeError):
        return
    found = re.search(r"\(profile `([^`]+)`\)", head)
    if found and found.group(1) != profile:
        from longred_bench.profiles.loader import BUILTIN

        theirs = found.group(1)  # a built-in profile's report: that profile (--rebuild's fix)
        fix = f"give --profile {theirs} for that report, or" if theirs in BUILTIN else "give"
        raise UserError(f"--out {out} holds {table}'s report of profile {theirs} (and its "
                        f"records), which profile {profile}'s would replace: {fix} another "
                        "--out")  # fmt: skip
