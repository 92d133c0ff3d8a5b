"""The sections of a profile file as frozen dataclasses, and the one function that builds any of
them from a YAML mapping: unknown keys, missing keys and values of the wrong type are rejected
with a one-line error that names the file and the key (``profile my.yaml: evaluation.ruler.samples
must be an integer, got 'ten'``). Torch-free: profile errors come before any model is loaded."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import types
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, Union

from longred_bench.errors import UserError


@dataclass(frozen=True)
class About:
    """What ``longred-bench profiles`` says of the profile; ``values`` tags settings (dotted key
    paths, e.g. ``training.cpt.long_len``) with where they come from: stated by a paper, or
    chosen by the suite and why. The dry-run of the profile prints them."""

    model: str = ""
    where: str = ""
    purpose: str = ""
    values: dict[str, str] = field(default_factory=dict)  # a key path -> where its value is from


@dataclass(frozen=True)
class ModelSpec:
    """The model every table of the profile starts from: a zoo name, a Hugging Face folder or a
    hub id, and its original context window (``max_position_embeddings``). ``layers`` (its
    decoder layers) lets plans choose distillation layers without reading the model; a run
    checks both against the model's own config. ``fallback``: an offline model (zoo name,
    folder or ``.gguf`` file) of the same shape that runs instead where the hub cannot give
    ``name`` (:mod:`longred_bench.models.choice`)."""

    name: str
    window: int
    layers: int | None = None
    fallback: str | None = None


@dataclass(frozen=True)
class Hardware:
    """Where training runs: ``device`` and ``dtype`` (``auto``: CUDA with bf16 where present,
    else CPU with fp32), processes per node (``torchrun --nproc-per-node``), FSDP (else DDP),
    activation checkpointing and activation offload (the checkpointed layer inputs kept in pinned
    host memory until the backward pass; it needs checkpointing); for the dry-run's estimates,
    one GPU's dense bf16 peak (``gpu_tflops``, an H100 SXM's 989 by default), the model-FLOPs
    utilisation assumed of it (``mfu``) and its memory (``gpu_memory_gib``)."""

    device: str = "auto"
    dtype: str = "auto"
    nproc_per_node: int = 1
    fsdp: bool = False
    activation_checkpointing: bool = False
    activation_offload: bool = False
    gpu_tflops: float = 989.0
    mfu: float = 0.35
    gpu_memory_gib: float = 80.0
    # (above, at most): each value must lie above the first bound and at or below the second.
    RANGES: ClassVar[dict[str, tuple[float, float | None]]] = {
        "gpu_tflops": (0, None), "mfu": (0, 1), "gpu_memory_gib": (0, None),
    }  # fmt: skip


@dataclass(frozen=True)
class ShortEval:
    """The short suite of every table: lm-eval suite, documents per task (None: all), the
    context length it is scored at (None: the model's window) and, for ``short``, its tasks
    (None: the suite's own)."""

    suite: str = "short_tiny"
    limit: int | None = None
    max_length: int | None = None
    tasks: tuple[str, ...] | None = None


@dataclass(frozen=True)
class RulerEval:
    """RULER: the lengths (each extension is scored at those within its window, the original
    model at all), samples per task and length, tasks (None: RULER's 13) and the NIAH/vt
    phrasing family (``standard`` or ``heldout``)."""

    lengths: tuple[int, ...] = (4096, 8192)
    samples: int = 10
    tasks: tuple[str, ...] | None = None
    phrasing: str = "standard"


@dataclass(frozen=True)
class PplEval:
    """Perplexity by position on ``corpus`` (None: not measured), ``windows`` windows of the
    longest RULER length of each extension."""

    corpus: str | None = None
    windows: int = 16


@dataclass(frozen=True)
class Evaluation:
    """How every table evaluates: device, backend (``hf`` or ``vllm``), batch size and the
    three suites."""

    device: str = "cpu"
    backend: str = "hf"
    batch_size: int = 8
    short: ShortEval = field(default_factory=ShortEval)
    ruler: RulerEval = field(default_factory=RulerEval)
    ppl: PplEval = field(default_factory=PplEval)


@dataclass(frozen=True)
class Drift:
    """Hidden-state and attention drift (Table 1, Figure 2): texts, how many, their length,
    how many top attention-KL layers to name, device and dtype."""

    texts: str = "brown"
    num_texts: int = 64
    seq_len: int = 1024
    top_m: int = 6
    device: str = "cpu"
    dtype: str = "float32"


@dataclass(frozen=True)
class Runs:
    """The run grid every training table starts from: the RoPE extensions compared, the seeds of
    each compared row (rows outside a table's comparison train one) and training keys added to
    every row (e.g. the long data)."""

    extensions: tuple[str, ...] = ()
    seeds: int = 1
    overrides: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Profile:
    """One resolved profile file (``extends`` followed). ``training`` maps a recipe to its
    training keys at this profile; ``tables`` maps a table to its own section, which the table's
    spec validates."""

    name: str
    model: ModelSpec
    about: About = field(default_factory=About)
    hardware: Hardware = field(default_factory=Hardware)
    training: dict[str, dict[str, Any]] = field(default_factory=dict)
    evaluation: Evaluation = field(default_factory=Evaluation)
    drift: Drift = field(default_factory=Drift)
    runs: Runs = field(default_factory=Runs)
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    source: str = ""  # the file it was read from (messages); not a key of the file


KEYS_NOT_IN_FILES = ("source",)


def build(cls: type, data: Any, *, file: str, where: str = "") -> Any:
    """An instance of dataclass ``cls`` from mapping ``data`` (``where``: the key path of the
    section, for messages); nested dataclasses, tuples, optional and numeric types are checked
    and coerced (whole floats to int, ints to float, ``1e-4`` strings to float)."""
    if not isinstance(data, dict):
        what = where or "the file"
        raise UserError(f"profile {file}: {what} must be a mapping of keys to values")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls) if f.name not in KEYS_NOT_IN_FILES]
    unknown = sorted(set(data) - set(names))
    if unknown:
        raise UserError(
            f"profile {file}: unknown key {_join(where, unknown[0])} (keys of "
            f"{where or 'a profile'}: {', '.join(names)})"
        )
    values = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise UserError(f"profile {file}: {_join(where, f.name)} is required")
            continue
        values[f.name] = coerce(hints[f.name], data[f.name], file=file, where=_join(where, f.name))
    for name, (above, most) in getattr(cls, "RANGES", {}).items():
        value = values.get(name)
        if value is not None and (value <= above or (most is not None and value > most)):
            bound = f"above {above:g}" + ("" if most is None else f" and at most {most:g}")
            raise UserError(f"profile {file}: {_join(where, name)} must be {bound}, got {value!r}")
    return cls(**values)


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def coerce(kind: Any, value: Any, *, file: str, where: str) -> Any:
    """``value`` as type ``kind`` (see :func:`build`), or a one-line error naming ``where``."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        error = None
        for inner in (a for a in args if a is not type(None)):
            try:
                return coerce(inner, value, file=file, where=where)
            except UserError as exc:
                error = exc
        raise error  # type: ignore[misc]
    if dataclasses.is_dataclass(kind):
        return build(kind, value, file=file, where=where)
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise UserError(f"profile {file}: {where} must be a list, got {value!r}")
        return tuple(coerce(args[0], v, file=file, where=f"{where}[{i}]")
                     for i, v in enumerate(value))  # fmt: skip
    if origin is dict:
        if not isinstance(value, dict):
            raise UserError(f"profile {file}: {where} must be a mapping, got {value!r}")
        return (
            dict(value)
            if args[1] is Any
            else {
                str(k): coerce(args[1], v, file=file, where=f"{where}.{k}")
                for k, v in value.items()
            }
        )
    if kind is Any:
        return value
    return _scalar(kind, value, file=file, where=where)


_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}


def _scalar(kind: type, value: Any, *, file: str, where: str) -> Any:
    if kind is float and isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = float(value)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if kind is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise UserError(f"profile {file}: {where} must be {_NAMES.get(kind, kind.__name__)}, "
                        f"got {value!r}")  # fmt: skip
    if kind is float and not math.isfinite(value):  # YAML's .nan and .inf pass every range
        raise UserError(f"profile {file}: {where}: {value!r} is not a finite number")
    return value


def to_dict(obj: Any) -> Any:
    """A dataclass (or a value inside one) as plain YAML-able data: tuples as lists; the
    ``source`` field left out."""
    if dataclasses.is_dataclass(obj):
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)
                if f.name not in KEYS_NOT_IN_FILES}  # fmt: skip
    if isinstance(obj, tuple | list):
        return [to_dict(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_dict(v) for k, v in obj.items()}
    return obj
