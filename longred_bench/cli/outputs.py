"""The output folder of each command, checked before anything is loaded or measured.

:data:`WRITES` names what each command writes under its ``--out`` folder (a trailing ``/``
marks a folder). :func:`check_out_dir` refuses, in one line naming the path and what is wrong,
an ``--out`` that is a file, lies under a file, cannot be written, holds a folder where the
command writes a file (or a file where it keeps a folder), or holds another command's results
(:data:`RESULTS`: they would sit beside this one's, and plots of the same name be replaced), so
no computation is lost to a bad path at the end of a run. It imports nothing heavy.
"""

from __future__ import annotations

import os
from pathlib import Path

from longred_bench.errors import UserError

WRITES: dict[str, tuple[str, ...]] = {
    "eval": (
        "eval.jsonl", "eval.md", "lm_eval_results.json", "ruler_lengths.png", "niah.png",
        "ppl_position.png", "requests/", "samples/",
    ),
    "drift": ("drift.jsonl", "drift.md", "drift.png", "config.yaml", "drift.partial.json"),
    "compare": (
        "compare.md", "retention.png", "ruler_lengths.png", "niah.png", "drift.png", "runs/",
    ),
    "psa": ("psa.jsonl", "psa.md", "psa.png"),
    "train": ("config.yaml", "metrics.jsonl", "run.json", "curves.png", "checkpoints/", "final/"),
    "reproduce": ("TABLE.md", "TABLE.png", "TABLE.jsonl.gz"),
    "reproduce --emit-slurm": ("submit.sh", "logs/"),
}  # fmt: skip


RESULTS = {"eval": "eval.jsonl", "drift": "drift.jsonl", "compare": "compare.md",
           "psa": "psa.jsonl", "train": "metrics.jsonl"}  # fmt: skip
"""The file that marks a folder as holding a command's results."""


def _nearest_existing(path: Path) -> Path:
    """``path`` or its closest ancestor that exists (``.`` for a relative path with none)."""
    for candidate in (path, *path.parents):
        if os.path.lexists(candidate):
            return candidate
    return Path(".")


def check_out_dir(out: Path, command: str, flag: str = "--out") -> None:
    """Raise :class:`UserError` unless ``out`` can be the output folder of ``command``."""
    names = WRITES[command]
    listing = ", ".join(n.rstrip("/") for n in names[:3])
    if out.exists() and not out.is_dir():
        raise UserError(
            f"{flag} {out} is an existing file, not a folder: give a folder path ({command} "
            f"writes {listing}, ... into it)"
        )
    base = _nearest_existing(out)
    if not base.is_dir():
        raise UserError(f"{flag} {out}: {base} is a file, so no folder can be made under it")
    if not os.access(base, os.W_OK | os.X_OK):
        raise UserError(f"{flag} {out}: {base} is not writable by this user; choose another path")
    for name in names:
        path = out / name.rstrip("/")
        if name.endswith("/") and path.exists() and not path.is_dir():
            raise UserError(
                f"{flag} {out}: {path} is a file where {command} keeps a folder; move it away "
                "or choose another folder"
            )
        if not name.endswith("/") and path.is_dir():
            raise UserError(
                f"{flag} {out}: {path} is a folder where {command} writes a file; move it away "
                "or choose another folder"
            )
    for other, marker in RESULTS.items():
        if other != command.split()[0] and (out / marker).is_file():
            raise UserError(
                f"{flag} {out} holds the results of `{other}` ({marker}); give {command} a "
                "folder of its own"
            )
