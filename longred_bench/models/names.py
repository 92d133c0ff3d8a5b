"""Whether a model spec names a model, decided without torch: a zoo name, a ``.gguf`` file, a
local Hugging Face folder or, when the hub answers, a model repository on it.

The commands that load models (``eval``, ``compare``, ``drift``, ``psa``, ``train``) check
their specs here right after parsing, so a misspelt name fails in one line, naming the model and
the valid choices, before torch, transformers or lm-eval are imported and without the hub retries of
``from_pretrained``; :func:`longred_bench.models.loading.resolve_spec` applies the same rules
when a model is loaded. Zoo models registered as builders (``tiny-base``, by
``longred_bench.jobs``) count once their layer is imported.
"""

from __future__ import annotations

import functools
import os
import socket
from pathlib import Path
from urllib.parse import urlparse

from longred_bench.errors import UserError, meant_note
from longred_bench.models.builders import BUILDERS

FIXED_ZOO = ("tiny-random", "smollm2-135m")  # built in or fetched: longred_bench.models.zoo
HUB_TIMEOUT_S = 3


def zoo_names() -> list[str]:
    """Every zoo name: the fixed ones, then the registered builders."""
    return [*FIXED_ZOO, *(n for n in BUILDERS if n not in FIXED_ZOO)]


def hub_unreachable() -> str | None:
    """Why the Hugging Face hub cannot be reached (offline mode set, or no connection within
    :data:`HUB_TIMEOUT_S` seconds), or ``None`` when it answers."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on"):
            return f"{name} is set"
    host = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co").hostname
    try:
        socket.create_connection((host or "huggingface.co", 443), timeout=HUB_TIMEOUT_S).close()
    except OSError as exc:
        return f"{host} is unreachable ({exc.strerror or type(exc).__name__})"
    return None


@functools.cache
def hub_has_model(spec: str) -> bool:
    """Whether the (reachable) hub has a model repository ``spec`` that this user may see: one
    request, no retries. ``True`` when the hub's answer is neither yes nor no (let the loader
    try and say why)."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HFValidationError

    try:
        return HfApi().repo_exists(spec)
    except HFValidationError:  # not a repository id at all ("a b", "../x", ...)
        return False
    except Exception:  # an error page, a timeout: undecided
        return True


def _choices() -> str:
    return (
        f"a zoo name ({', '.join(zoo_names())}), a local Hugging Face folder, a .gguf file or a "
        "hub id"
    )


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json",
                   "vocab.txt", "spiece.model", "merges.txt", "tekken.json")  # fmt: skip
"""Files a model folder's tokenizer is read from (one is enough: a tokenizer with no vocabulary
file, as a byte-level one, has its ``tokenizer_config.json``)."""


def check_tokenizer_files(spec: str, folder: Path) -> None:
    """Refuse model folder ``folder`` (of ``spec``) that holds no tokenizer file
    (:data:`TOKENIZER_FILES`): transformers' own refusal then speaks of converting a slow
    tokenizer and of installing sentencepiece, not of the missing files."""
    if not any((folder / f).is_file() for f in TOKENIZER_FILES):
        named = ", ".join(TOKENIZER_FILES[:3])
        holder = "its folder" if Path(spec).expanduser() == folder else str(folder)
        raise UserError(f"model {spec!r}: {holder} holds no tokenizer files ({named}, ...): "
                        "save the model's tokenizer there (tokenizer.save_pretrained(folder)), "
                        "or give the folder it was saved with")  # fmt: skip


def check_local(spec: str) -> bool:
    """``True`` when ``spec`` is a zoo name or an existing local model (a ``.gguf`` file or a
    folder with ``config.json``); ``False`` when it can only be a hub id; raises
    :class:`UserError` for a local path that cannot be a model or does not exist."""
    if spec in zoo_names():
        return True
    path = Path(spec).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise UserError(f"model {spec!r}: GGUF file {path} does not exist")
        return True
    if path.is_file():
        holder = path.parent
        fix = (f"give the folder that holds it, {holder}" if (holder / "config.json").is_file()
               else f"give {_choices()}")  # fmt: skip
        raise UserError(f"model {spec!r}: {path} is a file, not a model folder; {fix}")
    if path.exists():
        if not (path / "config.json").is_file():
            raise UserError(f"model {spec!r}: {path} is not a Hugging Face model folder (no "
                            f"config.json); {_fix_for_folder(path)}")  # fmt: skip
        return True
    if spec.startswith(("/", "./", "../", "~")) or spec.count("/") > 1:  # a path, never a hub
        raise UserError(f"model {spec!r}: no such folder; give {_choices()}")  # id (owner/name)
    return False


def _fix_for_folder(path: Path) -> str:
    """What to give instead of folder ``path``, which holds no ``config.json``: for a training
    run's folder or one of its checkpoints (``RUN/checkpoints/step-N``), the run's model."""
    if (path / "final" / "config.json").is_file():
        return f"it is a training run's folder; give its model, {path / 'final'}"
    if path.parent.name == "checkpoints" and path.name.startswith("step-"):
        run = path.parent.parent
        said = "it is a training checkpoint, kept to resume the run"
        if (run / "final" / "config.json").is_file():
            return f"{said}: give its model, {run / 'final'}"
        return f"{said}, which has no model yet: run its train command again to finish it"
    return f"give {_choices()}"


def _meant(spec: str) -> str:
    """`` (did you mean tiny-random?)`` where ``spec`` is close to a zoo name, else ``""``."""
    return meant_note(spec, zoo_names(), cutoff=0.8)


def check_not_mistyped(spec: str) -> None:
    """Refuse ``spec`` where it can only be a hub id, has no owner (``org/name``) and is close to
    a zoo name (``tiny-bse``): checked where the hub is not asked (a dry run, a profile, a pairs
    file), which would plan it as a hub model whose run then fails."""
    if "/" in spec or spec in zoo_names() or Path(spec).expanduser().exists():
        return
    meant = _meant(spec)
    if meant:
        raise UserError(f"model {spec!r} is not a zoo name or a local path{meant}; give the zoo "
                        "name, or a hub id as owner/name")  # fmt: skip


def check_hub_model(spec: str) -> None:
    """Raise :class:`UserError` (one line naming ``spec``, the valid choices and a zoo name it
    is close to) unless the hub is reachable and has model ``spec``."""
    why = hub_unreachable()
    if why is not None:
        raise UserError(
            f"model {spec!r} is not a local path or a zoo name ({', '.join(zoo_names())}), and "
            f"the hub cannot be reached: {why}{_meant(spec)}"
        )
    if not hub_has_model(spec):
        raise UserError(
            f"model {spec!r} was not found: it is not a local path, a zoo name or a model on "
            f"the hub you can see (private or gated: log in with `hf auth login`); give "
            f"{_choices()}{_meant(spec)}"
        )


def check_model_spec(spec: str) -> None:
    """Raise :class:`UserError` in one line unless ``spec`` names a model (see the module
    docstring); imports no torch."""
    if not check_local(spec):
        check_hub_model(spec)


WEIGHTS = ("*.safetensors", "pytorch_model*.bin", "*.safetensors.index.json")
"""The files a Hugging Face model folder keeps its weights in (one, sharded, or its index)."""


def check_weights(spec: str) -> None:
    """Refuse a local model folder with a ``config.json`` and no weights file (:data:`WEIGHTS`)
    in one line naming the folder: the loader's error ended "(offline? zoo names: ...)", advice
    for a hub id, not for a folder saved without its weights."""
    path = Path(spec).expanduser()
    if not (path.is_dir() and (path / "config.json").is_file()):
        return
    if not any(next(path.glob(pattern), None) for pattern in WEIGHTS):
        raise UserError(f"model {spec!r}: the folder holds a config.json but no weights "
                        "(model.safetensors, pytorch_model.bin or a sharded index); give the "
                        "folder save_pretrained wrote, weights included")  # fmt: skip
