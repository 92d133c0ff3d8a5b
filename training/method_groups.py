"""A method's own settings as a nested group of the training config: the groups, their recipes
and keys (:data:`METHOD_GROUPS`), flattening a config given with groups (:func:`flatten_groups`)
and nesting a flat one for display (:func:`grouped`)."""

from __future__ import annotations

from typing import Any

from longred_bench.errors import UserError

# A method's own settings, which a config may give as a nested group (``longred: {a1: 5}``,
# ``--set longred.a1=5``) or flat (``a1: 5``): the group names the recipes that read it, and a
# group given to another recipe is an error. The config itself stays flat, so its cache key is the
# same either way.
METHOD_GROUPS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "longred": (("longred",), ("a1", "a2", "layers", "top_m", "sampler", "cream_sigma")),
    "linearard": (("linearard",), ("ard_kinds", "ard_layers", "lora_rank", "lora_alpha", "impl",
                                   "cpt_steps")),
    "longrecipe": (("longrecipe",), ("anchors", "keep_other", "replay_steps", "replay_lr",
                                     "impact_steps", "merge_weight")),
    "merge": (("merge",), ("merge_with", "merge_weight")),
    "pretrain": (("pretrain",), ("architecture", "tokenizer", "vocab_size", "copy_fraction",
                                 "copy_warmup_steps", "copy_until", "copy_min_len", "copy_stages",
                                 "copy_row_len", "copy_batch", "copy_eval_every")),
}  # fmt: skip


DATA_MIX_KEYS = ("copy_fraction",)
"""Keys of a method group that every recipe reads through its data (``copy_fraction``: the
share of copy episodes in the ``pretrain`` data source, whichever recipe streams it)."""


def read_keys(recipe: str) -> set[str]:
    """The group settings ``recipe`` reads: those of its own method groups, and
    :data:`DATA_MIX_KEYS`."""
    own = {k for recipes, keys in METHOD_GROUPS.values() if recipe in recipes for k in keys}
    return own | set(DATA_MIX_KEYS)


def flatten_groups(data: dict[str, Any], recipe: str | None) -> dict[str, Any]:
    """``data`` with its method groups (:data:`METHOD_GROUPS`) flattened into their keys: a
    group of another recipe, a key outside its group or a key given both ways with two values is
    a one-line error."""
    out = {k: v for k, v in data.items() if not (k in METHOD_GROUPS and isinstance(v, dict))}
    for group, (recipes, keys) in METHOD_GROUPS.items():
        inner = data.get(group)
        if not isinstance(inner, dict):
            continue
        if recipe is not None and recipe not in recipes:
            raise UserError(f"config group {group} is for recipe {', '.join(recipes)}, not "
                            f"{recipe}")  # fmt: skip
        for key, value in inner.items():
            if key not in keys:
                raise UserError(f"config {group}.{key} is not a setting of {group} (its "
                                f"settings: {', '.join(keys)})")  # fmt: skip
            if key in out and out[key] != value:
                raise UserError(f"config {key} is given twice, as {group}.{key}={value!r} and "
                                f"{key}={out[key]!r}: keep one")  # fmt: skip
            out[key] = value
    return out


def grouped(fields_: dict[str, Any], recipe: str) -> dict[str, Any]:
    """A flat config dict with the settings of ``recipe``'s own method groups nested under
    their group and the other groups' settings left out (they do not apply to ``recipe``, which
    refuses them: a cpt plan listed LongReD's ``a1`` and pretraining's ``tokenizer`` as its
    own), for display; the stored config stays flat and whole."""
    own = read_keys(recipe)
    out = dict(fields_)
    for group, (recipes, keys) in METHOD_GROUPS.items():
        if recipe in recipes:
            out[group] = {k: out.pop(k) for k in keys if k in out}
        else:
            for key in set(keys) - own:
                out.pop(key, None)
    return out
