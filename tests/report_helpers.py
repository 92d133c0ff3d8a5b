"""Shared helpers of the report tests: the provenance hand-made records carry."""

from __future__ import annotations

PROV = {
    "device": "CPU test",
    "git_commit": "abc123",
    "versions": {"torch": "t", "transformers": "x"},
    "seed": 0,
    "timestamp": "2026-01-01T00:00:00+00:00",
    "config": {},
}
