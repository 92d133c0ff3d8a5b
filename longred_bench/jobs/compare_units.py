"""Where ``compare`` keeps each unit's records under ``<out>/runs/``: the records of a unit's
settings found (in its folder, or set aside beside it by an earlier call of other settings and
moved back), and a folder of other records set aside before the unit is measured, so that a call
with other settings or after a code change loses nothing measured."""

from __future__ import annotations

from glob import escape as glob_escape
from pathlib import Path
from typing import Any

from longred_bench.jobs.units import cached_records, stored_config
from longred_bench.results import config_hash, read_cached_json


def unit_records(path: Path, unit: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The records of ``unit`` saved at ``path``, or in a folder beside it that
    :func:`set_aside_unit` made of these settings, moved back (what ``path``'s folder holds is
    set aside first); None where neither is there."""
    got = cached_records(path, unit)
    if got is not None:
        return got
    folder = path.parent
    for aside in sorted(folder.parent.glob(f"{glob_escape(folder.name)}.*")):
        if aside.is_dir() and cached_records(aside / path.name, unit) is not None:
            set_aside_unit(folder)
            aside.replace(folder)
            return cached_records(path, unit)
    return None


def set_aside_unit(folder: Path) -> Path | None:
    """Move a unit's ``folder`` (records of other settings) to ``<folder>.<hash of its
    config>`` beside it (``-2``... where that is taken), so a call with other settings loses
    nothing measured; where it went (None where there is no folder)."""
    if not folder.exists():
        return None
    stamp = config_hash({"config": read_cached_json(folder / "config.json")})[:12]
    target, n = folder.with_name(f"{folder.name}.{stamp}"), 2
    while target.exists():
        target, n = folder.with_name(f"{folder.name}.{stamp}-{n}"), n + 1
    folder.replace(target)
    return target


OLDER_CODE = "the results of older code (the same settings; the code they depend on changed)"
OTHER_SETTINGS = "records of other settings"
DAMAGED = "records that cannot be read (damaged: the warning above says how)"


def make_room(path: Path, unit: dict[str, Any]) -> tuple[Path | None, str]:
    """Before ``path`` is measured for ``unit``: the records its folder holds set aside
    (:func:`set_aside_unit`); where they went (None where it holds none) and what they were:
    :data:`DAMAGED` where its config is the unit's own or does not parse (so its records did not
    read back: the cache's warning named the file), :data:`OLDER_CODE` where their config
    differs from the unit's in its code hash alone, else :data:`OTHER_SETTINGS`."""
    if not path.is_file():
        return None, OTHER_SETTINGS
    config = path.parent / "config.json"
    saved = read_cached_json(config)
    mine = stored_config(unit)
    if saved == mine or (saved is None and config.is_file()):
        return set_aside_unit(path.parent), DAMAGED
    same = isinstance(saved, dict) and {**saved, "code": None} == {**mine, "code": None}
    return set_aside_unit(path.parent), OLDER_CODE if same else OTHER_SETTINGS
