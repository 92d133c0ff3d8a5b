"""Report builders: each reads result records and writes one table or figure (Markdown + PNG)."""

from typing import Any


def duration(seconds: float | None) -> str:
    """Wall time as ``"1 h 02 min 03 s"`` / ``"2 min 03 s"`` (``"not recorded"`` for None)."""
    if seconds is None:
        return "not recorded"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min {secs:02d} s" if hours else f"{minutes} min {secs:02d} s"


def provenance(records: list[dict[str, Any]]) -> tuple[str, str]:
    """(devices, commits) the records were measured on, each joined for a report line."""
    provs = [r["provenance"] for r in records if isinstance(r.get("provenance"), dict)]
    devices = sorted({str(p.get("device")) for p in provs}) or ["not recorded"]
    commits = sorted({str(p.get("git_commit")) for p in provs}) or ["not recorded"]
    return ", ".join(devices), ", ".join(f"`{c}`" for c in commits)
