"""Report builders: each reads result records and writes one table or figure (Markdown + PNG)."""

from typing import Any

from longred_bench.source_tree import DIRTY, UNKNOWN


def duration(seconds: float | None) -> str:
    """Wall time as ``"1 h 02 min 03 s"`` / ``"2 min 03 s"`` / under a minute ``"5.7 s"`` (it
    read ``"0 min 06 s"``; ``"not recorded"`` for None)."""
    if seconds is None:
        return "not recorded"
    if round(seconds) < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min {secs:02d} s" if hours else f"{minutes} min {secs:02d} s"


def seconds_cell(seconds: float) -> str:
    """Seconds for a table cell: whole from 10 up, two significant figures below (a run of 0.4
    s read "0")."""
    return f"{seconds:.0f}" if round(seconds) >= 10 else f"{seconds:.2g}"


SHORT_HASH = 12
"""Hex digits of a source hash shown in reports."""


def provenance(records: list[dict[str, Any]]) -> tuple[str, str]:
    """(devices, code) the records were measured on and with, each joined for a report line.
    The code is the commits the records name, then the source hashes of those that carry one
    (short), each marked ``dirty`` where any of its records ran files that differ from its
    commit's, or ``dirty unknown`` where any could not be compared (records made before source
    hashes are said to have none), as in ``; source `1a2b3c4d5e6f` (dirty)``; then the weights
    of the suite-built models they were measured on (``; tiny-base weights `...```)."""
    provs = [r["provenance"] for r in records if isinstance(r.get("provenance"), dict)]
    devices = sorted({str(p.get("device")) for p in provs}) or ["not recorded"]
    commits = sorted({_commit(p) for p in provs}) or ["not recorded"]
    code = ", ".join(f"`{c}`" for c in commits)
    hashed = [p for p in provs if p.get("source_hash")]
    if hashed:
        flags: dict[str, set[str]] = {}
        for p in hashed:
            flags.setdefault(str(p["source_hash"]), set()).add(_dirty(p))
        code += "; source " + ", ".join(
            f"`{h[:SHORT_HASH]}`" + _flag(flags[h]) for h in sorted(flags)
        )
        if len(hashed) < len(provs):
            code += ", none for older records"
    return ", ".join(devices), code + _builds(provs)


def _builds(provs: list[dict[str, Any]]) -> str:
    """``; tiny-base weights `1a2b3c4d5e6f```: the weights of each suite-built model the records
    were measured on (:mod:`longred_bench.jobs.builds`), all of them where the records name
    several; empty where none names any."""
    seen: dict[str, set[str]] = {}
    for p in provs:
        for name, weights in (p.get("builds") or {}).items():
            seen.setdefault(str(name), set()).add(str(weights))
    return "".join(
        f"; {name} weights " + ", ".join(f"`{w}`" for w in sorted(ws))
        for name, ws in sorted(seen.items())
    )


def _dirty(prov: dict[str, Any]) -> str:
    """``dirty``, ``clean`` or ``unknown``: a record's dirty flag, in words."""
    flag = prov.get("dirty")
    return "dirty" if flag is True else "clean" if flag is False else "unknown"


def _flag(states: set[str]) -> str:
    """The mark of a source hash whose records have dirty flags ``states``."""
    if "dirty" in states:
        return " (dirty)"
    return " (dirty unknown)" if "unknown" in states else ""


def _commit(prov: dict[str, Any]) -> str:
    """The commit a record names; that of a record with a source hash without the dirty mark
    it also holds apart (:data:`~longred_bench.source_tree.DIRTY`, ``UNKNOWN``)."""
    commit = str(prov.get("git_commit"))
    if prov.get("source_hash"):
        commit = commit.removesuffix(DIRTY).removesuffix(UNKNOWN)
    return commit


def model_named(name: str) -> str:
    """``name`` as a report shows it: in backticks, with what its weights are where a zoo name
    stands for weights from a registry source (``smollm2-135m``: a 4-bit GGUF's)."""
    from longred_bench.data.sources import zoo_weights

    weights = zoo_weights(name)
    return f"`{name}`" + (f" ({weights})" if weights else "")
