"""Training values that ended in a traceback (in the config's own checks, or once the model had
loaded), refused in one line before: a list key whose elements are not of its type
(``layers=[a,b]``, ``snapshot_steps=[x]``, ``layers=[1.5]``), a ``--config`` file naming another
recipe or profile than the flags, a method's own setting given to a recipe that does not read it
(``--set a1=5`` for ``cpt``), and, for a run (not a dry run, which plans for any machine), a
``device`` torch does not know or this machine lacks."""

from __future__ import annotations

import contextlib
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from longred_bench.cli.devices import check_device
from longred_bench.errors import UserError


def _is(value: Any, kind: type) -> bool:
    if isinstance(value, bool):  # YAML's true/false are no numbers here
        return False
    return isinstance(value, int | float) if kind is float else isinstance(value, kind)


PROFILE_SECTIONS = {"extends", "about", "hardware", "evaluation", "runs", "tables", "drift",
                    "training"}  # fmt: skip
"""Keys of a profile file that no training config has."""


def check_train_sources(
    recipe: str,
    profile: str,
    config_file: Path | None,
    overrides: Mapping[str, Any],
    out: Path | None = None,
) -> None:
    """Refuse, in one line naming the key, an element of a list key that is not of the key's
    element type (``int``, ``float`` or ``str`` in
    :class:`~longred_bench.training.config.TrainConfig`) in what a run's config is resolved
    from: the profile's keys for ``recipe``, the ``--config`` file, the ``--set`` overrides
    (before the config's own checks compare such elements and stop with a ``TypeError``). And a
    ``--config`` file whose ``recipe`` or ``profile`` differs from the run's (``--recipe``, and
    ``--profile`` by the name it resolves to): the flags win, so a run's saved ``config.yaml``
    given with another recipe would train that recipe on keys written for its own without a
    word. The same names, as a run's ``config.yaml`` holds them, pass. And a setting of a method
    group (:data:`~longred_bench.training.method_groups.METHOD_GROUPS`) whose recipes do not
    include ``recipe``, given in the file or ``--set`` with another value than the run has
    without it or than the run in ``out`` (``--out``) was saved with
    (:func:`_check_method_keys`)."""
    from longred_bench.training.config import (
        TrainConfig,
        flatten_groups,
        profile_keys,
        read_yaml,
        yaml_number,
    )

    hints = typing.get_type_hints(TrainConfig)
    keys, name = profile_keys(recipe, profile)
    parts = [keys, overrides]
    if config_file is not None:
        data = read_yaml(config_file)
        sections = sorted(set(data) & PROFILE_SECTIONS)
        if sections:  # a profile (`profiles new` writes one), given where a run's config goes
            raise UserError(f"train: --config {config_file} is a profile (it has "
                            f"{', '.join(sections)}), not a training config: give it as "
                            f"--profile {config_file}")  # fmt: skip
        for key, mine in (("recipe", recipe), ("profile", name)):
            if key in data and str(data[key]) != mine:
                raise UserError(f"train: --config {config_file} says {key}: {data[key]}, the "
                                f"run is {key} {mine}: give the {key} with --{key}, and drop it "
                                "from the file or make them agree")  # fmt: skip
        parts.append(data)
    saved: dict[str, Any] = {}
    if out is not None and (out / "config.yaml").is_file():
        with contextlib.suppress(UserError):  # not a run's config: the run itself says so
            saved = read_yaml(out / "config.yaml")
    _check_method_keys(recipe, keys, parts[1:], saved)
    for part in parts:
        for key, raw in flatten_groups(dict(part), recipe).items():
            hint = hints.get(key)
            if typing.get_origin(hint) is not tuple or not isinstance(raw, list | tuple):
                continue
            kinds = [k for k in typing.get_args(hint) if k is not Ellipsis]
            value = yaml_number(list(raw))
            for i, item in enumerate(value):
                kind = kinds[min(i, len(kinds) - 1)]
                if kind in (int, float, str) and not _is(item, kind):
                    noun = {int: "whole numbers", float: "numbers", str: "strings"}[kind]
                    raise UserError(f"train: {key} takes {noun}, got {item!r} in "
                                    f"{list(raw)}")  # fmt: skip


def absolute_models(cfg: Any) -> Any:
    """Training config ``cfg`` with each model (:data:`~longred_bench.training.model_plan.
    MODEL_KEYS`) and local data member (``txt:``, ``jsonl:``, ``disk:``) it names by a relative
    path named by its absolute path, links resolved: the ``config.yaml`` beside the run then
    names them from any folder, and a run resumed from another folder, its paths named from
    there, is the same config (it read other data under the same relative path, or refused the
    same model named another way). A zoo name, a hub id, a registry corpus or a path that does
    not exist stays as it is."""
    from longred_bench.training.model_plan import absolute_paths

    changes = {k: v for k, v in absolute_paths(cfg).items() if v != getattr(cfg, k)}
    return cfg.replace(**changes) if changes else cfg


def check_train_device(device: str, *, dry_run: bool) -> None:
    """A ``device`` other than ``auto`` that :func:`~longred_bench.cli.devices.check_device`
    refuses; for a ``dry_run`` (a plan, for any machine) its name alone (``gpu`` was planned,
    and refused by the run)."""
    if device != "auto":
        check_device(device, flag="train: device", fix="--set device=cpu", here=not dry_run)


def check_train_teacher(recipe: str, teacher: str | None) -> None:
    """A ``teacher`` given to a recipe that distils from none (``cpt``, ``pose``, ...): it was
    recorded in the run's config and its cache key, and never loaded."""
    from longred_bench.training.methods import METHODS

    if teacher and recipe in METHODS and not METHODS[recipe].TEACHER:
        distil = ", ".join(name for name, method in METHODS.items() if method.TEACHER)
        raise UserError(f"train: teacher is for the recipes that distil from one ({distil}); "
                        f"{recipe} has none: drop it")  # fmt: skip


def _plain(value: Any, like: Any = None) -> Any:
    """``value`` as a config compares it: YAML's ``1e-4`` strings as numbers, lists as tuples
    (a lone value as a 1-tuple where ``like``, the value it is compared with, is a list), whole
    numbers as floats."""
    from longred_bench.training.config import yaml_number

    value = yaml_number(value)
    if isinstance(like, list | tuple) and not isinstance(value, list | tuple | type(None)):
        value = (value,)
    if isinstance(value, list | tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _check_method_keys(
    recipe: str,
    profile_keys: Mapping[str, Any],
    given: list[Mapping[str, Any]],
    saved: Mapping[str, Any],
) -> None:
    """Refuse a method's own setting (``a1`` of longred, ``lora_rank`` of linearard, ...) that
    ``given`` (the ``--config`` file, the ``--set`` overrides) sets for a recipe that does not
    read it, to another value than the run has without it (the recipe's file, then the
    profile's keys, then the default) and than ``saved`` (the config of the run in ``--out``,
    so that a run saved with such a value resumes): it was recorded in the run's config and
    cache key, and changed nothing. A run's own ``config.yaml`` passes; keys a profile's own
    sections give are its choice (profiles share one section among recipes)."""
    import dataclasses

    from longred_bench.training.config import TrainConfig, flatten_groups, read_yaml, recipe_file
    from longred_bench.training.method_groups import METHOD_GROUPS, read_keys

    read = read_keys(recipe)
    owner: dict[str, list[str]] = {}
    for group, (_recipes, keys) in METHOD_GROUPS.items():
        for key in keys:
            if key not in read:
                owner.setdefault(key, []).append(group)
    base = {f.name: f.default for f in dataclasses.fields(TrainConfig)
            if f.default is not dataclasses.MISSING}  # fmt: skip
    base.update({f.name: f.default_factory() for f in dataclasses.fields(TrainConfig)
                 if f.default_factory is not dataclasses.MISSING})  # fmt: skip
    base.update(flatten_groups(read_yaml(recipe_file(recipe)), recipe))
    base.update(flatten_groups(dict(profile_keys), recipe))
    for part in given:
        for key, value in flatten_groups(dict(part), recipe).items():
            if key not in owner:
                continue
            allowed = [base.get(key), *([saved[key]] if key in saved else [])]
            if all(_plain(value, v) != _plain(v) for v in allowed):
                groups = " or ".join(owner[key])
                raise UserError(f"train: {key} is a setting of {groups}, which recipe {recipe} "
                                f"does not run: drop it, or train --recipe {groups}")  # fmt: skip


def check_train_values(cfg: Any) -> None:
    """Refuse, before ``--out`` is compared with the run saved there or written to, values the
    run refuses only once its model has loaded: a ``dtype`` torch has no floating type of, and
    ``layers`` / ``ard_layers`` beyond the model's depth (read from its config where that is at
    hand: the suite's models, a local folder). A typo given beside a saved run was called "a run
    of another config"; in a new folder the failed run left its ``config.yaml`` behind."""
    from longred_bench.training.devices import floating_dtype

    if cfg.dtype != "auto":
        floating_dtype(cfg.dtype)
    depth = _depth(cfg.model)
    for key in ("layers", "ard_layers"):
        bad = [i for i in getattr(cfg, key, ()) or () if depth and not 1 <= i <= depth]
        if bad:
            raise UserError(f"config {key}={list(getattr(cfg, key))}: layer(s) {bad} out of "
                            f"range; the model has layers 1..{depth}")  # fmt: skip


def _depth(model: str) -> int | None:
    """Model ``model``'s decoder layers where its config is at hand, else None (its run
    checks)."""
    from longred_bench.cli.named import config_if_at_hand

    layers = getattr(config_if_at_hand(model), "num_hidden_layers", None)
    return int(layers) if isinstance(layers, int) else None
