"""Unit keys that survive a moved run cache: paths inside the cache (a trained checkpoint an
evaluation measures, a model a training run starts from) enter keys and stored configs under
the root the cache's units were first keyed at (:func:`key_root`, recorded in ``runs/``), so a
cache copied to another machine or folder, or reached by another spelling of its path, still
holds its results under the keys the plan computes (:func:`portable`); and a training run
interrupted before the move resumes after it (:func:`follow_moved_cache`).
"""

from __future__ import annotations

import contextlib
import functools
import json
from pathlib import Path
from typing import Any

from longred_bench.cache import atomic_write_text, cache_dir, warn_once
from longred_bench.jobs.builds import strings_in

TRAINED_MARK = "/runs/train-"
"""What a path to a trained checkpoint in the run cache holds after the cache root."""
KEY_ROOT_FILE = ".key-root"
"""In ``runs/``: ``{"root": ...}``, the root the cache's units were first keyed at."""
KEY_ROOT_SCAN = 2000
"""At most this many stored unit configs are read to find the root an older cache was keyed
at (one made before it recorded :data:`KEY_ROOT_FILE`)."""


def _in_cache(value: Any) -> tuple[str, str] | None:
    """``(root, rest)`` of a path to a trained run in a run cache (``rest`` from
    ``/runs/train-`` on), or None for any other value."""
    at = value.rfind(TRAINED_MARK) if isinstance(value, str) else -1
    return (value[:at], value[at:]) if at > 0 else None


def key_root() -> str:
    """The cache root as unit keys write paths inside the cache: where its units were first
    keyed (:data:`KEY_ROOT_FILE`, written with its first saved unit or finished run), so a cache
    moved or reached by another spelling of its path keeps its keys. A cache without that file
    (made before it was written) counts the root its stored unit configs name for one of its own
    trained runs, and records it; a cache that names none, its own root. A recorded root
    other than the cache's own that its units contradict (the file copied from another cache,
    or edited) is kept, and named in a warning: the units keyed at the root they name compute
    again until the file is deleted."""
    return _key_root(str(cache_dir()))


@functools.lru_cache(maxsize=16)
def _key_root(root: str) -> str:
    runs = Path(root) / "runs"
    recorded = _recorded(runs)
    if recorded is not None and recorded != root:  # a moved cache: do its units agree?
        named = _named_root(runs)
        if named is not None and named != recorded:  # copied from another cache, edited
            warn_once(f"run cache {runs / KEY_ROOT_FILE} records the root {recorded}, but its "
                      f"units name their trained runs under {named}: the units keyed there are "
                      f"computed again; to reuse them, delete {runs / KEY_ROOT_FILE} (the root "
                      "is then read from the units)", runs / KEY_ROOT_FILE)  # fmt: skip
    return recorded or _named_root(runs) or root


def _recorded(runs: Path) -> str | None:
    """The root :data:`KEY_ROOT_FILE` in ``runs`` records, or None where there is none; a
    damaged one (cut short, overwritten) is named in a warning, and recorded again."""
    path = runs / KEY_ROOT_FILE
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))["root"]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        recorded = None
    if isinstance(recorded, str) and recorded:
        return recorded
    warn_once(f"run cache {path} is damaged: the root its units were keyed at is read "
              "from their stored configs, and recorded again with the next unit saved",
              path)  # fmt: skip
    return None


def _named_root(runs: Path) -> str | None:
    """The root that stored unit configs under ``runs`` name for a trained run of this cache
    (a path ``ROOT/runs/train-NAME/...`` whose ``train-NAME`` is in ``runs``), or None."""
    stored = [*sorted(runs.glob("*/config.json")), *sorted(runs.glob("*/*/config.json"))]
    for path in stored[:KEY_ROOT_SCAN]:
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # a damaged unit names nothing
            continue
        for root, rest in filter(None, map(_in_cache, strings_in(config))):
            if (runs / rest[len("/runs/") :].split("/")[0]).is_dir():
                return root
    return None


def record_key_root() -> None:
    """Write :data:`KEY_ROOT_FILE` into the cache's ``runs/`` where it is not there yet, or
    damaged (a cache this process cannot write is left as it is)."""
    runs = cache_dir() / "runs"
    if not runs.is_dir() or _recorded(runs) is not None:
        return
    with contextlib.suppress(OSError):
        atomic_write_text(runs / KEY_ROOT_FILE, json.dumps({"root": key_root()}))


def portable(config: Any) -> Any:
    """``config`` with every path inside the cache root written under :func:`key_root` (the
    same config where the cache never moved): what keys and stored configs hold."""
    here = str(cache_dir())
    there = key_root()
    if here == there:
        return config

    def move(value: Any) -> Any:
        if isinstance(value, str) and (value == here or value.startswith(here + "/")):
            return there + value[len(here) :]
        if isinstance(value, dict):
            return {k: move(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [move(v) for v in value]
        return value

    return move(config)


def follow_moved_cache(run_dir: Path, cfg: Any) -> None:
    """Where the run cache was moved while training run ``run_dir`` was interrupted, its saved
    config (``config.yaml``) names the trained checkpoint it starts from (``init``) or merges
    (``merge_with``) where that lay before the move: name it where it is now, so the run resumes
    (its key names such checkpoints by their run, not by path). Nothing else is rewritten: a run
    of another config is still refused when it resumes."""
    import yaml

    path = run_dir / "config.yaml"
    try:
        saved = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return
    now = cfg.to_dict()
    if not isinstance(saved, dict) or saved == now or set(saved) != set(now):
        return

    def moved(before: Any, after: Any) -> bool:  # the same run's checkpoint, another root
        was, now_at = _in_cache(before), _in_cache(after)
        return was is not None and now_at is not None and was[1] == now_at[1]

    from longred_bench.training.config import LABEL_KEYS  # a name that decides nothing

    if all(saved[k] == v or moved(saved[k], v) or k in LABEL_KEYS for k, v in now.items()):
        atomic_write_text(path, yaml.safe_dump(now, sort_keys=True))
