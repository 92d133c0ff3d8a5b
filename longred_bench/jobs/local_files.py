"""What a unit's key holds of the local files it reads, besides their names: a stamp of each local
model folder outside the run cache (``model``, ``original``, ``extended``, ``teacher``) and of
each local data file or folder (a perplexity ``corpus``, drift ``texts``, a training run's
``txt:``/``jsonl:``/``disk:`` data). The stamp hashes each file's name, size and modification
time, so a file replaced at the same path, or a relative path read from another folder that
holds another file, makes another unit instead of reusing the first's result.

A data source with hub members and an offline fallback (``hf:...|austen+kjv``) reads one of the
two, chosen once per process (:func:`~longred_bench.data.source_documents.source_read`): the key
names the side read (:func:`sources_read`), so a unit computed on the fallback offline is not
reused where the hub's rows are read, nor the other way round.

Zoo names, hub ids and registry corpora have no local files; a trained checkpoint inside the
run cache is keyed by its run's folder, whose name holds that run's key. A config that names no
local file gets no stamp, so its key is what it was before stamps were kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from longred_bench.cache import cache_dir
from longred_bench.errors import UserError
from longred_bench.results import files_stamp

MODEL_KEYS = ("model", "original", "extended", "teacher", "init", "merge_with")
DATA_KEYS = ("corpus", "texts", "long_data", "short_data", "s2l_data")
TEXT_KEYS = ("corpus", "texts")  # measurement texts (drift, ppl): longred_bench.data.texts


def _in_cache(path: Path) -> bool:
    return path.resolve().is_relative_to(cache_dir().resolve())


def _stamp(stamps: dict[str, str], name: str, path: Path, *, recursive: bool = False) -> None:
    if path.exists() and not _in_cache(path):
        stamps[name] = files_stamp(path, recursive=recursive) or ""


def local_stamps(config: Mapping[str, Any]) -> dict[str, Any]:
    """``{"local_files": {name: stamp}}`` for the local files ``config`` reads (see the module
    docstring), or ``{}`` where it reads none."""
    from longred_bench.data.corpus_spec import local_paths
    from longred_bench.models.names import zoo_names

    stamps: dict[str, str] = {}
    zoo = set(zoo_names())
    for key in MODEL_KEYS:
        value = config.get(key)
        for name in value if isinstance(value, list) else [value]:
            if isinstance(name, str) and name not in zoo:
                _stamp(stamps, name, Path(name).expanduser())
    for key in DATA_KEYS:
        spec = config.get(key)
        if not isinstance(spec, str):
            continue
        try:
            paths = local_paths(spec)
        except UserError:  # not a data source this module reads (a corpus split, say)
            continue
        for path in paths:  # a folder of texts or a dataset's splits: every file in it
            # a measurement's .jsonl is read line by line since 2026-12-05 (its JSON was text):
            # another name, so units measured the old way are not taken for the new reading
            lines = key in TEXT_KEYS and path.suffix.lower() == ".jsonl"
            _stamp(stamps, f"{path} (JSON lines)" if lines else str(path), path, recursive=True)
    return {"local_files": stamps} if stamps else {}


def sources_read(config: Mapping[str, Any]) -> dict[str, Any]:
    """``{"data_read": {key: spec}}``: for each data source of ``config`` with hub members and an
    offline fallback, the side this process reads (see the module docstring); ``{}`` where it
    names none, so such a key is what it was before the side was kept."""
    from longred_bench.data.source_documents import source_read

    read = {}
    for key in DATA_KEYS:
        spec = config.get(key)
        side = source_read(spec) if isinstance(spec, str) else None
        if side is not None:
            read[key] = side
    return {"data_read": read} if read else {}
