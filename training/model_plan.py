"""The config a model will have, for plans, dry runs and checks, read without building it:
``tiny-base``'s from its recipe (the ``pretrain`` recipe at profile ``tiny``, whose build takes
about 15 minutes on 2 CPU cores), any other model's from its files
(:func:`~longred_bench.models.loading.load_config`). A dry run of an extension of tiny-base, a
teacher of another shape, a profile's stated window and depth are all read here, and nothing is
built."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

ARCHITECTURE_DEFAULTS: dict[str, Any] = {
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
    "max_position_embeddings": 256,
}
"""What ``pretrain`` gives a model whose ``architecture`` leaves these keys out."""
MODEL_KEYS = ("model", "teacher", "init", "merge_with")
"""The training config keys that name a model (a zoo name, a local path or a hub id)."""
BUILT_BY_PRETRAIN = "tiny-base"
"""The zoo model the suite builds with the ``pretrain`` recipe at profile ``tiny``."""


def planning_config(spec: str) -> object:
    """Model ``spec``'s config without building it: tiny-base's architecture from its recipe
    (no vocabulary size: its tokenizer is trained by the build), any other model's config."""
    if spec == BUILT_BY_PRETRAIN:
        from longred_bench.training.config import resolve_config

        arch = resolve_config("pretrain", profile="tiny").architecture
        return SimpleNamespace(model_type="llama", **{**ARCHITECTURE_DEFAULTS, **arch})
    from longred_bench.models.loading import load_config

    return load_config(spec)


def absolute_path(spec: str) -> str:
    """A model spec or bare data file as the same one named from any folder: an existing local
    path absolute, links resolved; a zoo name, a hub id or a path that does not exist as it is."""
    from pathlib import Path

    from longred_bench.models.names import zoo_names

    path = Path(spec).expanduser()
    return spec if spec in zoo_names() or not path.exists() else str(path.resolve())


def absolute_paths(config: Any) -> dict[str, str]:
    """``{key: value}`` of a training config's (a mapping, or an object with the keys as
    attributes) model and data keys, each local path in it named absolute
    (:func:`absolute_path`, :func:`absolute_data`); keys it has no text for left out."""
    from longred_bench.data.corpus_spec import DATA_KEYS

    get = config.get if isinstance(config, dict) else lambda key: getattr(config, key, None)
    keys = [*((k, absolute_path) for k in MODEL_KEYS), *((k, absolute_data) for k in DATA_KEYS)]
    return {key: absolute(value) for key, absolute in keys if isinstance(value := get(key), str)}


def absolute_data(spec: str) -> str:
    """Data source ``spec`` with each local member (``txt:``, ``jsonl:``, ``disk:``, a bare
    file) named by its absolute path, its options kept; registry corpora, keywords and hub
    members as they are. A spec that does not parse is returned as it is (its check says why)."""
    from pathlib import Path

    from longred_bench.data.corpus_spec import LOCAL, STANDALONE, parse_member, parse_source
    from longred_bench.errors import UserError

    try:
        source = parse_source(spec)
    except UserError:
        return spec
    if source.standalone:
        return spec if spec in STANDALONE else absolute_path(spec)

    def member(text: str) -> str:
        got = parse_member(text, spec)
        path = Path(got.target).expanduser()
        if got.kind not in LOCAL or not path.exists():
            return text
        return f"{got.kind}:{path.resolve()}{text[len(got.kind) + 1 + len(got.target) :]}"

    primary, bar, fallback = spec.partition("|")
    out = "+".join(member(t) for t in primary.split("+"))
    return out + (bar + "+".join(member(t) for t in fallback.split("+")) if bar else "")
