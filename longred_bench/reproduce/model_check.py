"""The profile's model against what the profile states, before a table's units run: its window
and depth, the extensions its tables apply (:func:`check_model`); where a run loads it, a local
folder's weights and tokenizer files too, which a plan (``--dry-run``, ``--list-units``) does
not need: it reads the config alone, so a folder of a config only is planned.
"""

from __future__ import annotations

from pathlib import Path

from longred_bench.errors import UserError
from longred_bench.profiles.schema import Profile
from longred_bench.reproduce.spec import Step


def extensions_of(by_table: dict[str, list[Step]]) -> dict[str, list[str]]:
    """Every RoPE extension the units of ``by_table`` (a table's steps by its name) apply to the
    profile's model (a training run's, an evaluation's, a drift's list), with the tables that
    apply it."""
    found: dict[str, list[str]] = {}
    for table, steps in by_table.items():
        for step in steps:
            rope = step.unit.config.get("rope")
            for spec in rope if isinstance(rope, list | tuple) else [rope]:
                if isinstance(spec, str) and table not in found.setdefault(spec, []):
                    found[spec].append(table)
    return found


def local_model(name: str) -> bool:
    """Whether model ``name`` is a local folder or ``.gguf`` file (not a zoo name or hub id;
    a local path that cannot be a model is refused as :func:`~.names.check_local` says)."""
    from longred_bench.models.names import check_local, zoo_names

    return name not in zoo_names() and check_local(name)


def read_cheaply(name: str) -> bool:
    """Whether model ``name``'s config reads without torch, so that every path (a dry run, a
    unit listing) checks the window and depth a profile states before planning on them:
    tiny-base (from its recipe) or a local model (:func:`local_model`)."""
    from longred_bench.training.model_plan import BUILT_BY_PRETRAIN

    return name == BUILT_BY_PRETRAIN or local_model(name)


def config_at_hand(name: str) -> bool:
    """Whether model ``name``'s config reads without a download or a build: tiny-base (from its
    recipe), tiny-random, or a local model (:func:`local_model`)."""
    return name in ("tiny-base", "tiny-random") or local_model(name)


def check_model(profile: Profile, fallback_for: str | None = None,
                extensions: dict[str, list[str]] | None = None, *,
                files: bool = False) -> None:  # fmt: skip
    """The profile's model exists and has the window and depth the profile states (its config
    is read, not its weights), and each of ``extensions`` (:func:`extensions_of`) applies to it
    (an ABF base above its own, a target window above its own): a one-line error naming the
    file and key otherwise. ``fallback_for``: the ``model.name`` the profile states, where its
    fallback (now ``profile.model.name``) runs instead; a fallback of another shape is refused
    as such. ``files`` (units are about to load it): a local folder without weights or
    tokenizer files is refused too (:func:`check_files`)."""
    from longred_bench.training.model_plan import planning_config

    m, where = profile.model, profile.source or profile.name
    key = "model.name" if fallback_for is None else "model.fallback"
    try:
        config = planning_config(m.name)
        if files:
            check_files(m.name)
    except UserError as exc:  # the model named once
        text = str(exc).removeprefix(f"model {m.name!r}: ")
        raise UserError(f"profile {where}: {key} {m.name!r}: {text}") from None
    window = int(getattr(config, "max_position_embeddings", 0))
    layers = int(getattr(config, "num_hidden_layers", 0))
    if fallback_for is not None and (window, layers) != (m.window, m.layers or layers):
        raise UserError(f"profile {where}: model.fallback {m.name} (run because the hub cannot "
                        f"give {fallback_for}) has window {window} and {layers} layers, not the "
                        f"stated {m.window} and {m.layers}: a fallback must have the model's "
                        f"shape; remove model.fallback, or give {fallback_for} as a local "
                        "folder")  # fmt: skip
    if window != m.window:
        raise UserError(f"profile {where}: model.window is {m.window}, but {m.name}'s config "
                        f"says {window}: set model.window: {window}")  # fmt: skip
    if m.layers is not None and layers != m.layers:
        raise UserError(f"profile {where}: model.layers is {m.layers}, but {m.name} has "
                        f"{layers}: set model.layers: {layers}")  # fmt: skip
    for rope, tables in (extensions or {}).items():
        from longred_bench.models.loading import extended_config  # torch: not for the shape

        try:
            extended_config(config, rope)
        except UserError as exc:
            raise UserError(f"profile {where}: extension {rope} ({', '.join(tables)}) does not "
                            f"apply to {m.name}: {exc}; change it in runs.extensions or the "
                            "table's own extensions") from None  # fmt: skip


def check_files(name: str) -> None:
    """Refuse local model folder ``name`` where it lacks its weights or its tokenizer files, as
    loading it would, but before any unit runs (a run stopped at its first unit; every task of
    ``--emit-slurm``'s arrays, on the cluster); anything else is left as it is."""
    from longred_bench.models.names import check_tokenizer_files, check_weights

    path = Path(name).expanduser()
    if local_model(name) and path.is_dir():
        check_weights(name)
        check_tokenizer_files(name, path)
