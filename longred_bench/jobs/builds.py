"""Which weights of a model the suite builds itself (``tiny-base``) a result was measured on.

``tiny-base``'s cache folder is named by its config (:func:`~longred_bench.jobs.tiny_base.
tiny_base_run_dir`): the same config trained on another machine gives other weights under the
same name (CPU and GPU arithmetic differ in the last bits, and training amplifies them). So a
result names the weights themselves: :func:`built_weights` is a short hash of the files the
build's manifest records (weights and tokenizer). Every record's provenance holds ``builds``
(:func:`result_builds`: ``{"tiny-base": hash}``) for the suite-built models its config names,
directly or through a training run started from one (the run keeps its start in
:data:`BASE_FILE`); reports print them (:func:`longred_bench.reports.provenance`), and a cached
result measured on other weights than those built now is refused in one line
(:func:`check_builds`) rather than mixed with new ones.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from longred_bench.cache import MANIFEST_FILE
from longred_bench.errors import UserError

BASE_FILE = "base.json"
"""In a training run's folder: ``{name: weights}`` of the suite-built models it started from."""
SHORT = 12
"""Hex digits of a weights hash."""


def built_weights(name: str) -> str | None:
    """A hash of suite-built model ``name``'s files as its manifest records them, or None
    (``name`` is not built by the suite, is not built yet, or its manifest has no hashes)."""
    from longred_bench.jobs.tiny_base import SUITE_BUILT, tiny_base_run_dir

    if name not in SUITE_BUILT:
        return None
    return manifest_weights(tiny_base_run_dir() / "final" / MANIFEST_FILE)


def manifest_weights(manifest: Path) -> str | None:
    """The hash of the files ``manifest`` records (each path with its sha256), or None where
    it is missing, unreadable or records no sha256."""
    return _weights(_read(manifest))


def _read(manifest: Path) -> dict[str, Any]:
    """The manifest at ``manifest`` as a dict; ``{}`` where it is missing or unreadable."""
    try:
        value = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _weights(manifest: dict[str, Any]) -> str | None:
    """The hash of a read manifest's file records, or None where it records no sha256."""
    try:
        pairs = sorted((str(f["path"]), str(f["sha256"])) for f in manifest["files"])
    except (KeyError, TypeError):
        return None
    return hashlib.sha256(json.dumps(pairs).encode()).hexdigest()[:SHORT] if pairs else None


def result_builds(config: Any) -> dict[str, str]:
    """``{name: weights}`` of the built suite models a result of ``config`` depends on: each one
    named among its values (``"tiny-base"``), and each one a training run named among them (its
    ``final`` folder) started from (:data:`BASE_FILE`). Not yet built models are left out."""
    from longred_bench.jobs.tiny_base import SUITE_BUILT

    out: dict[str, str] = {}
    for value in strings_in(config):
        if value in SUITE_BUILT:
            weights = built_weights(value)
            if weights:
                out[value] = weights
        elif value.endswith("final"):
            out.update(run_base(Path(value).parent) or _built_at(Path(value)))
    return dict(sorted(out.items()))


def _built_at(final: Path) -> dict[str, str]:
    """``{name: weights}`` where ``final`` is a suite-built model's own folder (its manifest
    names the model), else ``{}``."""
    from longred_bench.jobs.tiny_base import SUITE_BUILT

    manifest = _read(final / MANIFEST_FILE)
    name = manifest.get("model")
    weights = _weights(manifest) if name in SUITE_BUILT else None
    return {name: weights} if weights else {}


def strings_in(config: Any) -> list[str]:
    """Every string among ``config``'s values, nested ones included."""
    if isinstance(config, str):
        return [config]
    if isinstance(config, dict):
        config = list(config.values())
    if isinstance(config, list | tuple):
        return [s for x in config for s in strings_in(x)]
    return []


def run_base(run_dir: Path) -> dict[str, str]:
    """What training run ``run_dir`` started from (:data:`BASE_FILE`); ``{}`` where it does not
    say (a run made before runs recorded it, or one that starts from no suite-built model)."""
    try:
        base = json.loads((run_dir / BASE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(base, dict):
        return {}
    return {str(k): str(v) for k, v in base.items()}


def write_run_base(run_dir: Path, config: dict[str, Any]) -> None:
    """Keep in finished training run ``run_dir`` (:data:`BASE_FILE`) the built suite models its
    ``config`` started from, for the records of its evaluations; nothing where it names none."""
    from longred_bench.cache import atomic_write_text

    start = result_builds(config)
    if start:
        atomic_write_text(run_dir / BASE_FILE, json.dumps(start, sort_keys=True))


def check_builds(recorded: dict[str, str], where: Path) -> None:
    """Refuse a cached result at ``where`` measured on other weights (``recorded``) of a
    suite-built model than those built now, in one line; names absent on either side pass."""
    for name, weights in sorted(recorded.items()):
        now = built_weights(name)
        if now is not None and now != weights:
            raise UserError(
                f"{where} was measured on {name} weights {weights}, but the {name} built now has "
                f"weights {now} (rebuilt, or the cache was copied from another machine): set "
                "LONGRED_CACHE to a fresh folder, or move that folder away, to measure it again"
            )


def main() -> None:
    """``python -m longred_bench.jobs.builds``: each suite-built model and the weights hash of
    its build in this cache (``not built`` where there is none yet)."""
    from longred_bench.jobs.tiny_base import SUITE_BUILT

    for name in SUITE_BUILT:
        print(f"{name} {built_weights(name) or 'not built'}")


if __name__ == "__main__":
    main()
