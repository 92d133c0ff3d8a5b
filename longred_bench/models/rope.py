"""RoPE extension specs: parse ``abf:theta=2e7`` / ``pi:factor=4`` / JSON into transformers
``rope_parameters`` plus the target ``max_position_embeddings``, by pure functions.

Spec grammar: ``METHOD[:key=value[,key=value...]]`` or a JSON object with a ``method`` key and the
same keys. Methods and their keys:

==========  ===================================  ==============================================
method      transformers ``rope_type``           keys (required first)
==========  ===================================  ==============================================
abf         default (``rope_theta`` raised)      theta; factor (default 4) or max_len
pi          linear                               factor or max_len; theta
yarn        yarn                                 factor or max_len; theta, beta_fast, beta_slow,
                                                 attention_factor
dynamic     dynamic (NTK-aware, dynamic)         factor or max_len; theta
llama3      llama3                               factor or max_len; theta, low_freq_factor (1),
                                                 high_freq_factor (4)
==========  ===================================  ==============================================

``max_len`` sets the target ``max_position_embeddings`` directly (and, for the methods with a
factor, the factor ``max_len`` / the original window); otherwise it is the original window
times ``factor``. Every value is a finite number; ``theta`` and the YaRN and llama3 options are
above 0 and ``max_len`` is a whole number; a key given twice is refused.

``dynamic`` records the original window as ``original_max_position_embeddings`` (as YaRN and
llama3 do): transformers' dynamic NTK scales the base only past the window its rotary module is
built with, so :func:`longred_bench.models.loading.extend` builds it with the original window,
not the target (with the target, a ``dynamic:factor=4`` model was the original one up to 4x).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from longred_bench.errors import UserError

_ROPE_TYPE = {
    "abf": "default",
    "pi": "linear",
    "yarn": "yarn",
    "dynamic": "dynamic",
    "llama3": "llama3",
}
_KEYS = {
    "abf": {"theta", "factor", "max_len"},
    "pi": {"factor", "theta", "max_len"},
    "yarn": {"factor", "theta", "max_len", "beta_fast", "beta_slow", "attention_factor"},
    "dynamic": {"factor", "theta", "max_len"},
    "llama3": {"factor", "theta", "max_len", "low_freq_factor", "high_freq_factor"},
}
_REQUIRED = {
    "abf": "theta",
    "pi": "factor",
    "yarn": "factor",
    "dynamic": "factor",
    "llama3": "factor",
}
ABF_DEFAULT_FACTOR = 4.0


@dataclass(frozen=True)
class RopeSpec:
    """A parsed RoPE extension: the method and its numeric parameters."""

    method: str
    params: tuple[tuple[str, float], ...]

    def label(self) -> str:
        """Canonical short form, e.g. ``abf:theta=2e+07``."""
        if not self.params:
            return self.method
        body = ",".join(f"{k}={_fmt(v)}" for k, v in self.params)
        return f"{self.method}:{body}"


@dataclass(frozen=True)
class OriginalRope:
    """What an extension is applied to: the model's RoPE base and its trained window."""

    theta: float
    max_position_embeddings: int


def _fmt(value: float) -> str:
    if float(value).is_integer() and abs(value) < 1e6:
        return str(int(value))
    short = f"{value:g}"  # every digit where 6 significant ones lose some: labels name units
    return short if float(short) == value else repr(float(value))


YARN_BETA_FAST, YARN_BETA_SLOW = 32.0, 1.0  # transformers' YaRN defaults

_POSITIVE = ("theta", "beta_fast", "beta_slow", "attention_factor", "low_freq_factor",
             "high_freq_factor", "max_len")  # fmt: skip


def _number(text: str, key: str, value: object) -> float:
    """``value`` of ``key`` as a finite float (a JSON bool is not a number); a one-line error
    naming the spec otherwise."""
    try:
        if isinstance(value, bool):
            raise ValueError
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        raise UserError(f"RoPE spec {text!r}: {key}={value!r} is not a number") from None
    if not math.isfinite(number):
        raise UserError(f"RoPE spec {text!r}: {key}={value!r} must be a finite number")
    if key in _POSITIVE and number <= 0:
        raise UserError(f"RoPE spec {text!r}: {key} must be above 0 (got {_fmt(number)})")
    if key == "max_len" and not number.is_integer():
        raise UserError(f"RoPE spec {text!r}: max_len must be a whole number of tokens "
                        f"(got {_fmt(number)})")  # fmt: skip
    return number


def parse_rope_spec(text: str) -> RopeSpec:
    """Parse a spec string (short form or JSON) into a :class:`RopeSpec`; validates keys."""
    text = text.strip()
    if text.startswith("{"):
        try:  # its key/value pairs, in order: a key given twice is seen, not overwritten
            pairs = json.loads(text, object_pairs_hook=lambda p: p)
        except json.JSONDecodeError as exc:
            raise UserError(f"RoPE spec {text!r} is not valid JSON ({exc.msg})") from None
        methods = [v for k, v in pairs if k == "method"] if isinstance(pairs, list) else []
        if len(methods) != 1:
            raise UserError(f"RoPE spec {text!r}: a JSON spec needs one 'method' key")
        method = str(methods[0])
        raw = [(k, v) for k, v in pairs if k != "method"]
    else:
        method, _, body = text.partition(":")
        raw = []
        for item in filter(None, (p.strip() for p in body.split(","))):
            key, sep, value = item.partition("=")
            if not sep:
                raise UserError(f"RoPE spec {text!r}: {item!r} is not key=value")
            raw.append((key.strip(), value.strip()))
    method = method.strip().lower()
    if method not in _ROPE_TYPE:
        raise UserError(
            f"unknown RoPE extension method {method!r}; use one of {', '.join(_ROPE_TYPE)}"
        )
    params: dict[str, float] = {}
    for key, value in raw:
        if key not in _KEYS[method]:
            raise UserError(
                f"RoPE spec {text!r}: unknown key {key!r} for {method}; "
                f"allowed: {', '.join(sorted(_KEYS[method]))}"
            )
        if key in params:
            raise UserError(f"RoPE spec {text!r}: {key} is given twice; give it once")
        params[key] = _number(text, key, value)
    required = _REQUIRED[method]
    if required not in params and not (required == "factor" and "max_len" in params):
        also = " (or max_len=...)" if required == "factor" else ""
        raise UserError(f"RoPE spec {text!r}: {method} needs {required}=...{also}")
    if "factor" in params and params["factor"] <= 1:
        raise UserError(f"RoPE spec {text!r}: factor must be > 1 (got {_fmt(params['factor'])})")
    if "factor" in params and "max_len" in params:
        raise UserError(f"RoPE spec {text!r}: give factor or max_len for the target, not both")
    fast, slow = params.get("beta_fast", YARN_BETA_FAST), params.get("beta_slow", YARN_BETA_SLOW)
    if method == "yarn" and fast <= slow:
        raise UserError(
            f"RoPE spec {text!r}: beta_fast ({_fmt(fast)}) must exceed beta_slow ({_fmt(slow)}): "
            "YaRN leaves the dimensions that turn more than beta_fast times over the original "
            "window as they are and interpolates those under beta_slow (defaults 32 and 1)"
        )
    return RopeSpec(method, tuple(sorted(params.items())))


def _factor_and_target(spec: RopeSpec, orig_len: int) -> tuple[float, int]:
    p = dict(spec.params)
    if spec.method == "abf":
        factor = p.get("factor", ABF_DEFAULT_FACTOR)
    else:
        factor = p["factor"] if "factor" in p else p["max_len"] / orig_len
    return factor, int(p["max_len"]) if "max_len" in p else round(orig_len * factor)


def target_window(rope: str | RopeSpec, window: int) -> int:
    """The window (``max_position_embeddings``) extension ``rope`` gives a model whose window is
    ``window``: what :func:`rope_parameters` sets, without the model's config."""
    spec = parse_rope_spec(rope) if isinstance(rope, str) else rope
    return _factor_and_target(spec, window)[1]


def rope_parameters(spec: RopeSpec, original: OriginalRope) -> tuple[dict[str, Any], int]:
    """Turn ``spec`` applied to ``original`` into (transformers ``rope_parameters``, target
    ``max_position_embeddings``). Pure: reads nothing but its arguments."""
    p = dict(spec.params)
    theta = p.get("theta", original.theta)
    orig_len = original.max_position_embeddings
    if spec.method == "abf" and theta <= original.theta:
        raise UserError(
            f"ABF needs theta above the original {original.theta:g} (got {theta:g}); "
            "a smaller base shortens, not extends, the window"
        )
    factor, target = _factor_and_target(spec, orig_len)
    if target <= orig_len:
        raise UserError(
            f"RoPE spec {spec.label()}: target window {target} is not above the original {orig_len}"
        )
    params: dict[str, Any] = {"rope_type": _ROPE_TYPE[spec.method], "rope_theta": float(theta)}
    if spec.method == "pi":
        params["factor"] = float(factor)
    elif spec.method in ("dynamic", "yarn"):
        params.update(factor=float(factor), original_max_position_embeddings=orig_len)
        for key in ("beta_fast", "beta_slow", "attention_factor"):  # YaRN's own keys
            if key in p:
                params[key] = float(p[key])
    elif spec.method == "llama3":
        params.update(
            factor=float(factor),
            original_max_position_embeddings=orig_len,
            low_freq_factor=float(p.get("low_freq_factor", 1.0)),
            high_freq_factor=float(p.get("high_freq_factor", 4.0)),
        )
        if params["high_freq_factor"] <= params["low_freq_factor"]:
            raise UserError(
                f"RoPE spec {spec.label()}: high_freq_factor must exceed low_freq_factor"
            )
    return params, target
