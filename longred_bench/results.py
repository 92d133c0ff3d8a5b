"""Tidy result records with provenance, written as JSONL and read back as a pandas DataFrame.

Every record carries a ``provenance`` object: git commit of the code, package versions, device,
seed, UTC timestamp and the resolved config of the run that produced it.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import platform
import subprocess
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

from longred_bench.cache import atomic_write_text

_PACKAGES = ("longred-bench", "torch", "transformers", "lm_eval", "triton")


def git_commit() -> str:
    """The commit of the source checkout this package runs from (``+dirty`` if modified), or
    ``unknown`` outside a git checkout."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def device_name(device: str | torch.device = "cpu") -> str:
    """Human-readable device: the GPU's name, or the CPU model and core count."""
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
    return f"CPU {model} x{torch.get_num_threads()} threads"


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


@dataclass(frozen=True)
class Provenance:
    """Where a result came from."""

    git_commit: str
    versions: dict[str, str]
    device: str
    seed: int
    timestamp: str
    config: dict[str, Any]

    @classmethod
    def collect(
        cls, config: dict[str, Any], *, seed: int, device: str | torch.device
    ) -> Provenance:
        """Provenance of a run happening now with ``config`` on ``device``."""
        return cls(
            git_commit=git_commit(),
            versions={name: _version(name) for name in _PACKAGES},
            device=device_name(device),
            seed=seed,
            timestamp=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            config=config,
        )


def config_hash(config: dict[str, Any]) -> str:
    """Short stable hash of a JSON-able config (key order does not matter)."""
    blob = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def write_records(path: Path, records: list[dict[str, Any]], provenance: Provenance) -> Path:
    """Write ``records`` (flat dicts) to ``path`` as JSONL, each with the provenance attached.
    The file appears whole or not at all."""
    prov = asdict(provenance)
    lines = [json.dumps({**r, "provenance": prov}, sort_keys=True) for r in records]
    atomic_write_text(path, "\n".join(lines) + "\n")
    return path


def read_records(path: Path) -> list[dict[str, Any]]:
    """Records of a JSONL results file."""
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
