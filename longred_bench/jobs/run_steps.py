"""A finished training run's timings per optimizer step, as one record beside a table's records
(the reports' per-step costs read it: :mod:`longred_bench.reports.runs`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from longred_bench.jobs.builds import run_base
from longred_bench.results import STEPS_KIND, read_records


def run_steps_record(run_dir: Path) -> dict[str, Any] | None:
    """A finished run's timings per optimizer step as one record of kind :data:`STEPS_KIND`:
    ``step_seconds`` and ``step_tokens``, the cumulative training seconds and tokens after each
    step (its ``metrics.jsonl``), and the ``provenance`` of the training where its ``run.json``
    recorded one, with ``builds`` the suite-built weights the run started from
    (:func:`~longred_bench.jobs.builds.run_base`: the training records none itself). None where
    either file is absent or does not parse (a report then has the run's totals only)."""
    try:
        rows = read_records(run_dir / "metrics.jsonl")
        info = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
        seconds = [float(r["seconds"]) for r in rows]
        tokens = [int(r["tokens"]) for r in rows]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    prov = info.get("provenance") if isinstance(info, dict) else None
    if isinstance(prov, dict) and not prov.get("builds") and (start := run_base(run_dir)):
        prov = {**prov, "builds": start}
    return {"kind": STEPS_KIND, "step_seconds": seconds, "step_tokens": tokens,
            **({"provenance": prov} if isinstance(prov, dict) else {})}  # fmt: skip
