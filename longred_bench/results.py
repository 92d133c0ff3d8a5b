"""Tidy result records with provenance, written as JSONL and read back as a pandas DataFrame.

Every record carries a ``provenance`` object: git commit of the code, the content hash of the
source that ran and whether it differs from that commit's, package versions, device, seed, UTC
timestamp, the resolved config of the run that produced it and the weights of the suite-built
models it was measured on (``builds``: :mod:`longred_bench.jobs.builds`).

Cached runs (a directory holding the records, the config that made them and a ``manifest.json``
with their sizes and sha256) are written whole by :func:`save_run_dir` and read by
:func:`read_cached_records`, which treats a damaged or unparsable cache as absent, with a warning.
"""

from __future__ import annotations

import datetime as _dt
import gzip
import hashlib
import json
import platform
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from longred_bench.cache import (
    atomic_dir,
    atomic_write_bytes,
    atomic_write_text,
    check_entry,
    warn_once,
    write_manifest,
)
from longred_bench.source_tree import COMMIT_VAR, source_state

_PACKAGES = ("longred-bench", "torch", "transformers", "lm_eval", "triton")


SOURCE_COMMIT_VAR = COMMIT_VAR


UNCACHED = "not cached (computed again when its unit runs)"
"""What a damaged run-cache entry is: a listing or a plan counts it as absent; a run computes it."""


def git_commit() -> str:
    """The commit of the source that runs, as records name it: ``COMMIT``, ``COMMIT+dirty``
    where the package's source files differ from that commit's, ``COMMIT (dirty unknown)``
    where they cannot be compared with them, or ``no git checkout (longred-bench VERSION)`` for
    an installed package. ``$LONGRED_SOURCE_COMMIT``, where set, names the commit (a copied
    source tree's, whose ``.git`` may be missing or stale); see
    :mod:`longred_bench.source_tree`. Git's own messages never reach the terminal."""
    return source_state().label


def device_name(device: Any = "cpu") -> str:
    """Human-readable device: the GPU's name, or the CPU model and its torch threads."""
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    threads = torch.get_num_threads()
    return f"CPU {model}, {threads} torch thread{'' if threads == 1 else 's'}"


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


@dataclass(frozen=True)
class Provenance:
    """Where a result came from: ``git_commit`` as :func:`git_commit` names it, the
    ``source_hash`` of the package's source files that ran and whether they differ from that
    commit's (``dirty``: true, false, or ``"unknown"`` where they could not be compared); see
    :mod:`longred_bench.source_tree`. ``builds``: ``{name: weights hash}`` of the suite-built
    models (``tiny-base``) the config depends on (:func:`~longred_bench.jobs.builds.
    result_builds`)."""

    git_commit: str
    source_hash: str
    dirty: bool | str
    versions: dict[str, str]
    device: str
    seed: int
    timestamp: str
    config: dict[str, Any]
    builds: dict[str, str] = field(default_factory=dict)

    @classmethod
    def collect(
        cls,
        config: dict[str, Any],
        *,
        seed: int,
        device: Any,
        builds: dict[str, str] | None = None,
    ) -> Provenance:
        """Provenance of a run happening now with ``config`` on ``device`` (measured on the
        suite-built model weights ``builds``)."""
        state = source_state()
        return cls(
            git_commit=state.label,
            source_hash=state.source_hash,
            dirty=state.dirty_flag,
            versions={name: _version(name) for name in _PACKAGES},
            device=device_name(device),
            seed=seed,
            timestamp=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            config=config,
            builds=dict(builds or {}),
        )


STEPS_KIND = "train_steps"
"""The kind of a training run's one record of its timings per optimizer step
(:func:`longred_bench.jobs.run_steps.run_steps_record`)."""


def config_hash(config: dict[str, Any]) -> str:
    """Short stable hash of a JSON-able config (key order does not matter)."""
    blob = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def files_stamp(path: Path, *, recursive: bool = False) -> str | None:
    """The name, size and modification time of each file of a folder (``recursive``: of its
    subfolders too, by their paths in it; a data folder is read whole) or of one file, hashed;
    None where ``path`` does not exist."""
    path = path.expanduser()
    if not path.exists():
        return None
    if not path.is_dir():
        files = {path.name: path}
    else:
        found = path.rglob("*") if recursive else path.iterdir()
        files = {str(p.relative_to(path)): p for p in sorted(found) if p.is_file()}
    stats = {name: [p.stat().st_size, p.stat().st_mtime_ns] for name, p in files.items()}
    return config_hash(stats)


def write_records(path: Path, records: list[dict[str, Any]], provenance: Provenance) -> Path:
    """Write ``records`` (flat dicts) to ``path`` as JSONL, each with the provenance attached.
    The file appears whole or not at all."""
    prov = asdict(provenance)
    lines = [json.dumps({**r, "provenance": prov}, sort_keys=True) for r in records]
    atomic_write_text(path, "\n".join(lines) + "\n")
    return path


def read_records(path: Path) -> list[dict[str, Any]]:
    """Records of a JSONL results file (gzip-compressed when its name ends in ``.gz``)."""
    opener = gzip.open if Path(path).suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def read_cached_records(path: Path) -> list[dict[str, Any]] | None:
    """Records of the cached run file ``path``, or None if it is absent, does not match the
    manifest of its directory, or does not parse (then with a warning naming the file)."""
    if not path.is_file():
        return None
    if warn_if_damaged(path.parent):
        return None
    try:
        return read_records(path)
    except (OSError, EOFError, ValueError) as exc:  # EOFError: a gzip file cut short
        warn_once(f"run cache {path} does not parse ({type(exc).__name__}): {UNCACHED}", path)
        return None


def warn_if_damaged(run_dir: Path) -> bool:
    """Whether the files of the cached run ``run_dir`` do not match its manifest (a file cut
    short, replaced: another unit's ``config.json``), then with a warning naming it; False where
    they match (a result of another config or older code, say) or there is no such folder."""
    check = check_entry(run_dir, required=False)
    if check.status == "missing" or check.usable:
        return False
    warn_once(f"run cache {run_dir} is corrupt ({check.detail}): {UNCACHED}", run_dir)
    return True


def warn_damaged_config(run_dir: Path) -> None:
    """Name the damage of the cached run ``run_dir``, whose ``config.json`` is not the one looked
    for, in one warning: its manifest's where the files do not match it (a ``config.json`` cut
    short is one damaged file, not also one that does not parse), else that its ``config.json``
    does not parse where it does not; nothing where it is another config's, whole."""
    if not warn_if_damaged(run_dir):
        read_cached_json(run_dir / "config.json")


def read_cached_json(path: Path, *, quiet: bool = False) -> Any:
    """The JSON in ``path``, or None if it is absent or does not parse (with a warning, unless
    ``quiet``)."""
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        if not quiet:
            warn_once(f"run cache {path} does not parse ({type(exc).__name__}): {UNCACHED}", path)
        return None


def save_run_dir(run_dir: Path, write: Callable[[Path], object]) -> Path:
    """Build a cached run in a temporary directory with ``write(tmp)``, record its files in a
    manifest and swap it in for ``run_dir`` (an older copy is deleted only after). Concurrent
    writers of the same run each leave a whole one; the last one stays."""
    with atomic_dir(run_dir, replace=True) as tmp:
        write(tmp)
        write_manifest(tmp, {"kind": "run"})
    return run_dir


_RUN_LABELS = ("model", "rope", "suite", "task", "row", "extension", "seed")


def over_length_documents(records: list[dict[str, Any]]) -> int:
    """Documents skipped as too long for the window, in all: ``n_over_length`` of each task's
    ``eval`` records, counted once per task and run (a task reports it on every metric, e.g.
    ``acc`` and ``acc_norm``); groups (``n_samples`` None) are left out."""
    per_task = {
        tuple(r.get(k) for k in _RUN_LABELS): int(r.get("n_over_length") or 0)
        for r in records
        if r.get("kind") == "eval" and r.get("n_samples") is not None
    }
    return sum(per_task.values())


def gzip_fixed(data: bytes) -> bytes:
    """``data`` gzip-compressed (level 9) with a header that names no file, time or operating
    system (OS byte 255, "unknown", whatever Python writes by default), so the same bytes give
    the same file on every Python with the same zlib."""
    out = bytearray(gzip.compress(data, compresslevel=9, mtime=0))
    out[9] = 255
    return bytes(out)


def write_jsonl(path: Path, records: list[dict]) -> Path:
    """Records (with their provenance) as JSON lines, atomically; gzip-compressed when ``path``
    ends in ``.gz``, with no name or time in the header, so the same records give the same
    bytes."""
    text = "".join(json.dumps(r, sort_keys=True) + "\n" for r in records)
    if Path(path).suffix == ".gz":
        atomic_write_bytes(path, gzip_fixed(text.encode("utf-8")))
    else:
        atomic_write_text(path, text)
    return path


TABLE_RECORDS_SUFFIX = ".jsonl.gz"


def write_table_records(out: Path, name: str, records: list[dict]) -> Path:
    """A reproduced table's records as ``out/NAME.jsonl.gz`` (per-document scores of every run
    make them tens of MB as text; compressed they are committed beside the report). An
    uncompressed ``NAME.jsonl`` an older version wrote there is removed once the new file is
    in place, so the directory holds one set of records per table."""
    path = write_jsonl(out / f"{name}{TABLE_RECORDS_SUFFIX}", records)
    (out / f"{name}.jsonl").unlink(missing_ok=True)
    return path
