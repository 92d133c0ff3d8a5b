"""Model loading and RoPE extension.

``load(spec, rope=...)`` accepts a local Hugging Face directory, a hub id (when online), a ``.gguf``
file or a zoo name (:mod:`longred_bench.models.zoo`) and returns the model in fp32 on CPU (or the
dtype and device asked for) with its tokenizer. ``extend(model, rope)`` returns an independent copy
whose config carries the new ``rope_parameters`` and target ``max_position_embeddings``; the rotary
embedding modules are rebuilt from that config (for dynamic NTK, from a copy at the original
window: :func:`rotary_config`), the weights are cloned. Nothing in transformers is copied or
patched: the change goes through the config alone.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, PreTrainedModel

from longred_bench.errors import UserError
from longred_bench.models.load_report import load_report_held
from longred_bench.models.names import (
    check_hub_model,
    check_local,
    check_tokenizer_files,
    check_weights,
)
from longred_bench.models.names import hub_unreachable as hub_unreachable  # re-exported
from longred_bench.models.rope import OriginalRope, RopeSpec, parse_rope_spec, rope_parameters
from longred_bench.models.zoo import (
    ZOO,
    ZOO_DIRS,
    check_model_dir,
    load_zoo,
    model_file_error,
    zoo_dir,
)

_RECORDED_WINDOW = (
    "Unrecognized keys in `rope_parameters` for 'rope_type'='dynamic': "
    "{'original_max_position_embeddings'}"
)


class _RecordedWindow(logging.Filter):
    """Keeps transformers' warning off a dynamic config's recorded original window, a key it
    does not read (:func:`rotary_config` does); any other unrecognized key is still said."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != _RECORDED_WINDOW


logging.getLogger("transformers.modeling_rope_utils").addFilter(_RecordedWindow())

_DAMAGED_FIX = "replace the damaged files (a cached copy: delete the folder and run again)"


@dataclass
class LoadedModel:
    """A causal LM with its tokenizer and the spec strings it was loaded from."""

    model: PreTrainedModel
    tokenizer: object
    spec: str
    rope: str | None = None


EXTENSION = "context extension by RoPE scaling"
"""What :func:`original_rope` checks for by default."""


def original_rope(config: object, use: str = EXTENSION) -> OriginalRope:
    """The RoPE base and window of ``config``; errors for models ``use`` (what changes the
    RoPE: :data:`EXTENSION`, or PCD's local variant) cannot apply to."""
    params = getattr(config, "rope_parameters", None)
    model_type = getattr(config, "model_type", "?")
    if not params:
        raise UserError(
            f"model type {model_type!r} has no rotary position embedding (RoPE); "
            f"{use} does not apply to it"
        )
    if "rope_theta" not in params:
        kinds = ", ".join(sorted(str(k) for k in params))
        yourself = " (or pass a JSON rope spec per kind to transformers yourself)"
        raise UserError(
            f"model type {model_type!r} uses a different RoPE per layer kind ({kinds}); "
            f"which layers {use} should change is ambiguous: use a model with one RoPE"
            + (yourself if use == EXTENSION else "")
        )
    layer_types = set(getattr(config, "layer_types", None) or [])
    if len(layer_types) > 1:
        raise UserError(
            f"model type {model_type!r} mixes attention kinds ({', '.join(sorted(layer_types))}); "
            f"{use} of its sliding-window layers is ambiguous"
        )
    return OriginalRope(float(params["rope_theta"]), int(config.max_position_embeddings))


def extended_config(config: object, rope: str | RopeSpec) -> object:
    """A deep copy of ``config`` with the extension's ``rope_parameters`` and target window. A
    config whose RoPE is already scaled (a ``rope_type`` other than ``default``: Llama 3.1's
    ``llama3``, an extended checkpoint) is refused: the new parameters would replace that
    scaling, not add to it."""
    spec = parse_rope_spec(rope) if isinstance(rope, str) else rope
    original = original_rope(config)
    kind = (getattr(config, "rope_parameters", None) or {}).get("rope_type", "default")
    if kind != "default":
        factor = config.rope_parameters.get("factor")
        raise UserError(
            f"RoPE spec {spec.label()}: the model's RoPE is already scaled ({kind}"
            f"{f', factor {factor:g}' if isinstance(factor, int | float) else ''}, window "
            f"{original.max_position_embeddings}); an extension would replace that scaling, not "
            "add to it: extend the model it was made from, or evaluate this one without --rope"
        )
    params, target = rope_parameters(spec, original)
    if "partial_rotary_factor" in config.rope_parameters:  # Phi, StableLM: RoPE on part of a head
        params["partial_rotary_factor"] = config.rope_parameters["partial_rotary_factor"]
    new = copy.deepcopy(config)
    new.rope_parameters = params
    new.max_position_embeddings = target
    return new


def extend(model: PreTrainedModel, rope: str | RopeSpec) -> PreTrainedModel:
    """An independent copy of ``model`` with RoPE extended by ``rope`` (spec string or parsed)."""
    new_config = extended_config(model.config, rope)
    new = copy.deepcopy(model)
    for key in ("rope_parameters", "max_position_embeddings"):
        setattr(new.config, key, getattr(new_config, key))
    _build_rotary(new)
    return new


def rotary_config(config: object) -> object:
    """The config a rotary module of a model with ``config`` is built from: ``config`` itself,
    or for dynamic NTK a copy whose ``max_position_embeddings`` is the original window recorded
    in its ``rope_parameters``. transformers' dynamic scaling takes the window its module is
    built with as the trained one and scales the base only past it: built with the target, a
    ``dynamic:factor=4`` model is the original model up to four times its window."""
    params = getattr(config, "rope_parameters", None) or {}
    window = params.get("original_max_position_embeddings")
    if params.get("rope_type") != "dynamic" or not window:
        return config
    if int(window) == int(config.max_position_embeddings):
        return config
    built = copy.deepcopy(config)
    built.max_position_embeddings = int(window)
    return built


def _build_rotary(model: PreTrainedModel) -> None:
    """Every rotary module of ``model`` built again from its config (:func:`rotary_config`), on
    the device of its weights."""
    device = next(model.parameters()).device
    config = rotary_config(model.config)
    for parent, attr, module in rotary_modules(model):
        setattr(parent, attr, type(module)(config=config).to(device))


def rotary_modules(model: torch.nn.Module) -> list[tuple[torch.nn.Module, str, torch.nn.Module]]:
    """``(parent, attribute, module)`` of every rotary embedding module of ``model`` (a module
    with an ``inv_freq`` buffer and a ``rope_type``); raises if there is none."""
    found = []
    for name, module in model.named_modules():
        if hasattr(module, "inv_freq") and hasattr(module, "rope_type"):
            parent_name, _, attr = name.rpartition(".")
            parent = model.get_submodule(parent_name) if parent_name else model
            found.append((parent, attr, module))
    if not found:
        raise UserError(f"found no rotary embedding module in {type(model).__name__}")
    return found


def resolve_spec(spec: str) -> tuple[str, dict[str, object]]:
    """Where ``from_pretrained`` reads model ``spec`` and its extra kwargs: a zoo model's
    directory (fetched or built if needed), a local HF directory, a ``.gguf`` file (its folder
    and ``gguf_file``) or a hub id. A name that is none of the local kinds fails at once, in one
    line, when the hub cannot be reached or has no such model, instead of after transformers'
    retries (:mod:`longred_bench.models.names`)."""
    if spec in ZOO_DIRS:
        return str(zoo_dir(spec)), {}
    path = Path(spec).expanduser()
    if check_local(spec):
        if path.suffix == ".gguf":
            return str(path.parent), {"gguf_file": path.name}
        return str(path), {}
    check_hub_model(spec)
    return spec, {}


def _load_error(spec: str, exc: OSError) -> UserError:
    """The loader's ``exc`` in one line, with advice for what ``spec`` is: a local folder
    (:func:`~longred_bench.models.names.check_weights` first: one saved without its weights),
    or a name (offline?)."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if Path(spec).expanduser().exists():
        check_weights(spec)
        hint = "is the folder whole: config.json, weights and tokenizer files?"
    else:
        hint = f"offline? zoo names: {', '.join(ZOO)}"
    return UserError(f"could not load model {spec!r}: {first} ({hint})")


NOT_A_MODEL_FOLDER = ("does not recognize this architecture", "Couldn't instantiate the backend")
"""transformers' refusals that mean the folder is no model it can read (an unknown model type,
tokenizer files it cannot build a tokenizer from), where the fix is another folder."""


@contextlib.contextmanager
def _unreadable(spec: str, part: str) -> Iterator[None]:
    """Turn transformers' refusal of a model's ``part`` into one line naming the model: its
    own words, on one line (a config value of the wrong type: the field and why; custom code:
    its advice on ``trust_remote_code``; a tokenizer library missing: which), with advice on the
    folder only where the folder is the problem (:data:`NOT_A_MODEL_FOLDER`)."""
    from huggingface_hub.errors import StrictDataclassError

    try:
        yield
    except (ValueError, StrictDataclassError) as exc:
        text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        text = text or type(exc).__name__
        folder = isinstance(exc, StrictDataclassError) or any(m in text for m in NOT_A_MODEL_FOLDER)
        advice = ("; give a Hugging Face model folder (config.json, weights and tokenizer files) "
                  "or hub id") if folder else ""  # fmt: skip
        raise UserError(f"model {spec!r}: transformers cannot read {part}: "
                        f"{text.rstrip('.')}{advice}") from None  # fmt: skip


def check_weights_cover(spec: str, info: dict[str, object]) -> None:
    """Refuse a model whose weight files lack tensors its config names (``info``:
    ``from_pretrained``'s loading info): transformers initialises those at random and goes on,
    so every score would be a partly random model's (a config.json of 7 layers beside the
    weights of 4)."""
    missing = sorted(info.get("missing_keys") or [])
    if not missing:
        return
    extra = sorted(info.get("unexpected_keys") or [])
    unused = (
        f"; {len(extra)} tensor(s) in the files match nothing in it ({extra[0]})" if extra else ""
    )
    raise UserError(
        f"model {spec!r}: its weight files lack {len(missing)} tensor(s) its config.json names "
        f"({', '.join(missing[:2])}{', ...' if len(missing) > 2 else ''}){unused}: transformers "
        "would start them at random; give the folder whose config.json its weights were saved "
        "with"
    )


def _load_pretrained(spec: str, dtype: torch.dtype, trust_remote_code: bool) -> LoadedModel:
    source, extra = resolve_spec(spec)
    if not extra and Path(source).is_dir():  # checked against its manifest where it has one
        check_model_dir(Path(source), _DAMAGED_FIX)
    try:
        with load_report_held(spec), _unreadable(spec, "its config or weights"):
            model, info = AutoModelForCausalLM.from_pretrained(
                source, dtype=dtype, trust_remote_code=trust_remote_code,
                output_loading_info=True, **extra,
            )  # fmt: skip
            check_weights_cover(spec, info)
        if not extra and Path(source).is_dir():
            check_tokenizer_files(spec, Path(source))
        with _unreadable(spec, "its tokenizer"):
            tokenizer = AutoTokenizer.from_pretrained(
                source, trust_remote_code=trust_remote_code, **extra
            )
    except OSError as exc:
        raise _load_error(spec, exc) from None
    except (SafetensorError, json.JSONDecodeError) as exc:
        raise model_file_error(Path(source), exc, _DAMAGED_FIX) from None
    if getattr(model, "hf_quantizer", None) is not None:
        model.hf_quantizer = None
        model.config.quantization_config = None
    return LoadedModel(model, tokenizer, spec)


def load_tokenizer(spec: str, *, trust_remote_code: bool = False) -> object:
    """The tokenizer of model ``spec`` alone (zoo name, HF dir, ``.gguf`` file or hub id)."""
    if spec == "tiny-random":
        from longred_bench.models.zoo import byte_tokenizer

        return byte_tokenizer()
    source, extra = resolve_spec(spec)
    if not extra and Path(source).is_dir():
        check_tokenizer_files(spec, Path(source))
    try:
        with _unreadable(spec, "its tokenizer or config"):
            return AutoTokenizer.from_pretrained(
                source, trust_remote_code=trust_remote_code, **extra
            )
    except OSError as exc:
        raise _load_error(spec, exc) from None


def load_config(spec: str, *, trust_remote_code: bool = False) -> object:
    """The config of model ``spec`` without its weights (the built-in tiny model is built)."""
    if spec == "tiny-random":
        return load_zoo(spec)[0].config
    source, extra = resolve_spec(spec)
    try:
        with _unreadable(spec, "its config"):
            return AutoConfig.from_pretrained(source, trust_remote_code=trust_remote_code, **extra)
    except OSError as exc:
        raise _load_error(spec, exc) from None


def load(
    spec: str,
    *,
    rope: str | None = None,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    trust_remote_code: bool = False,
) -> LoadedModel:
    """Load ``spec`` (zoo name, HF dir, ``.gguf`` file or hub id), optionally RoPE-extended.

    The model is put in eval mode on ``device`` in ``dtype`` (fp32 by default: bf16 matmuls are
    two orders of magnitude slower than fp32 on CPU). A ``rope`` spec that does not parse is
    refused before any weights are read.
    """
    if rope is not None:
        parse_rope_spec(rope)
    if spec in ZOO:
        loaded = LoadedModel(*load_zoo(spec), spec=spec)
    else:
        loaded = _load_pretrained(spec, dtype, trust_remote_code)
    loaded.model.to(device=device, dtype=dtype).eval()
    if rotary_config(loaded.model.config) is not loaded.model.config:  # a saved dynamic model
        _build_rotary(loaded.model)
    if rope is not None:
        loaded = LoadedModel(extend(loaded.model, rope), loaded.tokenizer, spec, rope)
        loaded.model.eval()
    return loaded
