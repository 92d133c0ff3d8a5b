"""Helpers shared by the benchmark scripts: Markdown tables, CSV rows, a model's part of a file
name, the provenance (commit, device, versions, time, load average) every report starts with,
and how a script runs (:func:`run_script`: bad input is one line, as on the command line)."""

from __future__ import annotations

import csv
import datetime as dt
import os
import platform
import shlex
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import longred_bench.jobs  # noqa: F401  (registers tiny-base in the model zoo, as every command does)


def markdown_table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """A Markdown table of ``columns`` of ``rows`` (``None`` as an empty cell)."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        cells = ["" if row.get(c) is None else str(row.get(c)) for c in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_csv(rows: Sequence[dict[str, Any]], path: Path, columns: Sequence[str]) -> None:
    """``rows`` as CSV with header ``columns`` (other keys are left out), written atomically
    (a temporary file beside ``path``, then renamed), so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    tmp.replace(path)


def file_label(model: str) -> str:
    """``model`` as a file name part: a model folder by its name (a run's ``final/`` by its run
    folder's), a name with ``/`` or ``:`` with ``_`` instead, and no dots (not a suffix)."""
    path = Path(model)
    if path.is_dir():
        model = path.resolve().parent.name if path.name == "final" else path.resolve().name
    return model.replace("/", "_").replace(":", "_").replace(".", "-")


def cuda_sync(device: Any = None) -> None:
    """Wait for the GPU's queued work (``device``: a CUDA device, or None for the current one
    where CUDA is available); nothing on a CPU."""
    import torch

    if device is None and torch.cuda.is_available():
        torch.cuda.synchronize()
    elif device is not None and torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def loadavg() -> str:
    """The 1/5/15-minute load average, as text."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _version(package: str) -> str:
    """``package``'s installed version, or ``not installed`` (a GPU image may lack lm-eval)."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def source12() -> str:
    """The first 12 hex digits of the hash of the source that runs
    (:func:`longred_bench.source_tree.source_hash`), as every report names it beside the
    commit."""
    from longred_bench.source_tree import source_hash

    return source_hash()[:12]


def commit_and_source() -> str:
    """The commit and the source hash of the code that runs, as report headers name them: the
    commit in backquotes, then the hash in parentheses."""
    from longred_bench.results import git_commit

    return f"`{git_commit()}` (source `{source12()}`)"


def provenance(device: str = "cpu") -> dict[str, Any]:
    """Commit (and the hash of the source that runs, :mod:`longred_bench.source_tree`), device
    (``device``'s name: a CPU's threads included), package versions, timestamp and load average
    now."""
    import torch

    from longred_bench.results import device_name, git_commit

    return {
        "commit": git_commit(),
        "source": source12(),
        "device": device_name(device),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": metadata.version("transformers"),
        "lm_eval": _version("lm_eval"),
        "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "loadavg": loadavg(),
    }


def provenance_lines(info: dict[str, Any], cmd: str) -> str:
    """Markdown lines with the command and the provenance of a report."""
    source = f" (source `{info['source']}`)" if info.get("source") else ""
    return (
        f"`{cmd}`\n\n"
        f"- commit `{info['commit']}`{source}, {info['device']} "
        f"({info['cpu_count']} cores visible), python {info['python']}, torch {info['torch']}, "
        f"transformers {info['transformers']}, lm-eval {info['lm_eval']}\n"
        f"- started {info['timestamp']}; load average (1/5/15 min) at start {info['loadavg']}, "
        f"at end {info.get('loadavg_end', '?')}\n\n"
    )


def run_script(main: Callable[[], Any], interrupted: Callable[[], str] | None = None) -> None:
    """Run a benchmark's ``main`` and exit with its status (an int, else 0). Bad input (a
    :class:`~longred_bench.errors.UserError`: an unknown model, a RoPE spec, a device this
    machine lacks) ends in one line on stderr and status 2, as ``longred-bench`` does. With
    ``interrupted``, Ctrl-C ends in one line (``interrupted: `` and what it returns: what was
    saved) and status 130, not a traceback."""
    from longred_bench.errors import UserError

    try:
        status = main()
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        if interrupted is None:
            raise
        print(f"\ninterrupted: {interrupted()}", file=sys.stderr, flush=True)
        raise SystemExit(130) from None
    raise SystemExit(status if isinstance(status, int) else 0)


def command_line(script: str, argv: Sequence[str] | None) -> str:
    """The command a report records: ``python benchmarks/<script's file name>`` and ``argv``
    (None: this process's arguments), quoted as a shell reads them."""
    given = sys.argv[1:] if argv is None else argv
    return shlex.join(["python", f"benchmarks/{Path(script).name}", *given])
