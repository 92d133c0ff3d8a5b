"""PCD's parameters (:class:`PcdConfig`, with the ``--pcd-*`` command-line flags that set them)
and the torch-free arithmetic of its local window.

Kept apart from :mod:`longred_bench.pcd.model` (the model side, which needs torch and transformers)
so that command lines and configs can name PCD without importing either. The parameters and their
defaults are explained there.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import asdict, dataclass
from typing import Any

from longred_bench.errors import UserError, reject_unknown_keys

DEFAULT_ALPHA = 1.5
DEFAULT_BETA = 0.1
DEFAULT_TOP_K = 50
DEFAULT_LOCAL_FRACTION = 0.25
PLAUSIBILITY_RULES = ("adaptive", "topk")
MIN_WINDOW = 7  # a base B' > 1 needs a longest wavelength above 2 pi
MOVING_ROPE_TYPES = ("dynamic", "longrope")
"""RoPE types whose frequencies the model rescales with the input's length: PCD's local window
``W'``, set by a base ``B'`` solved once from the frequencies as built, would not be the window
that runs (under dynamic NTK a 256-token ``W'`` ran as 1,280 tokens), so PCD refuses them."""
LENGTH_QUANTUM = 64  # prompt lengths are rounded up to this before the local fraction applies


def _number(name: str, value: Any, *, integer: bool) -> float | int:
    """``value`` as a float (or an int when ``integer``); a UserError naming ``name`` if not."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise UserError(f"PCD {name} must be a number, got {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise UserError(f"PCD {name} must be a number, got {value!r}") from None
    if integer:
        if not number.is_integer():
            raise UserError(f"PCD {name} must be a whole number, got {value!r}")
        return int(number)
    return number


@dataclass(frozen=True)
class PcdConfig:
    """PCD's parameters (see :mod:`longred_bench.pcd.model`; the unconfirmed ones are marked).

    - ``alpha``: contrast strength (>= 0; 0 gives the base model's greedy output exactly).
    - ``plausibility``: which tokens the contrast may choose from (unconfirmed): ``adaptive``
      (default), those whose standard-pass probability is at least ``beta`` times the top one's;
      ``topk``, the ``top_k`` most likely of the standard pass.
    - ``beta``: the adaptive cut (0 < beta <= 1).
    - ``top_k``: the top-k cut (>= 1).
    - The local window rule (unconfirmed; at most one of the three): ``local_fraction``, the
      local window ``W'`` as a fraction of the prompt (default 0.25 when none is given);
      ``local_window``, ``W'`` in tokens; ``local_base``, the local RoPE base ``B'`` itself.
    - ``first_pair``: first RoPE pair whose frequency changes (unconfirmed; 0 = all pairs).
    """

    alpha: float = DEFAULT_ALPHA
    plausibility: str = "adaptive"
    beta: float = DEFAULT_BETA
    top_k: int = DEFAULT_TOP_K
    local_fraction: float | None = None
    local_window: int | None = None
    local_base: float | None = None
    first_pair: int = 0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PcdConfig:
        """Build from a dict, rejecting unknown keys."""
        reject_unknown_keys(cls, data, "PCD")
        return cls(**data)

    def __post_init__(self) -> None:
        coerce = {
            "alpha": _number("alpha", self.alpha, integer=False),
            "beta": _number("beta", self.beta, integer=False),
            "top_k": _number("top_k", self.top_k, integer=True),
            "first_pair": _number("first_pair", self.first_pair, integer=True),
        }
        for name, integer in (("local_fraction", False), ("local_window", True),
                              ("local_base", False)):  # fmt: skip
            if getattr(self, name) is not None:
                coerce[name] = _number(name, getattr(self, name), integer=integer)
        for key, value in coerce.items():
            object.__setattr__(self, key, value)
        if not math.isfinite(self.alpha) or self.alpha < 0:
            raise UserError(f"PCD alpha must be a finite number >= 0, got {self.alpha:g}")
        if self.plausibility not in PLAUSIBILITY_RULES:
            raise UserError(
                f"PCD plausibility must be one of {', '.join(PLAUSIBILITY_RULES)}, "
                f"got {self.plausibility!r}"
            )
        if not 0 < self.beta <= 1:
            raise UserError(f"PCD beta must be in (0, 1], got {self.beta:g}")
        if self.top_k < 1:
            raise UserError(f"PCD top_k must be at least 1, got {self.top_k}")
        given = [n for n in ("local_fraction", "local_window", "local_base") if getattr(self, n)
                 is not None]  # fmt: skip
        if len(given) > 1:
            raise UserError(f"PCD: give one of local_fraction, local_window, local_base, not "
                            f"{' and '.join(given)}")  # fmt: skip
        if self.local_fraction is not None and not 0 < self.local_fraction <= 1:
            raise UserError(f"PCD local_fraction must be in (0, 1], got {self.local_fraction:g}")
        if self.local_window is not None and self.local_window < MIN_WINDOW:
            raise UserError(
                f"PCD local_window must be at least {MIN_WINDOW} tokens, got {self.local_window}"
            )
        if self.local_base is not None and not (1 < self.local_base < math.inf):
            raise UserError(
                f"PCD local_base must be a finite RoPE base > 1, got {self.local_base:g}"
            )
        if self.first_pair < 0:
            raise UserError(f"PCD first_pair must be >= 0, got {self.first_pair}")

    def as_dict(self) -> dict[str, Any]:
        """The parameters as a JSON-able dict (the keys :meth:`from_dict` takes)."""
        return asdict(self)

    def window_rule(self) -> str:
        """The local window rule as a short text: ``fraction 0.25``, ``window 64`` or
        ``base 100``."""
        if self.local_base is not None:
            return f"base {self.local_base:g}"
        if self.local_window is not None:
            return f"window {self.local_window}"
        return f"fraction {self.fraction():g}"

    def fraction(self) -> float:
        """The local fraction in force (the default when no rule is given)."""
        return DEFAULT_LOCAL_FRACTION if self.local_fraction is None else self.local_fraction

    def window_for(self, prompt_tokens: int) -> int | None:
        """The local window ``W'`` for a prompt of ``prompt_tokens`` tokens (``None`` under a
        ``local_base`` rule): ``local_window``, or ``local_fraction`` of the prompt's length
        rounded up to a multiple of :data:`LENGTH_QUANTUM` tokens (so that the prompts of one
        RULER length share a window), at least :data:`MIN_WINDOW`."""
        if self.local_base is not None:
            return None
        if self.local_window is not None:
            return self.local_window
        padded = LENGTH_QUANTUM * math.ceil(max(int(prompt_tokens), 1) / LENGTH_QUANTUM)
        return max(MIN_WINDOW, round(self.fraction() * padded))


def trained_window(config: Any) -> int:
    """The window ``config``'s model was trained at: ``original_max_position_embeddings`` of
    its ``rope_parameters`` where recorded (YaRN, llama3), else ``max_position_embeddings``."""
    params = getattr(config, "rope_parameters", None) or {}
    return int(params.get("original_max_position_embeddings") or config.max_position_embeddings)


_FLAGS = {  # --pcd-<flag>: (PcdConfig field, type, help)
    "alpha": ("alpha", float, f"contrast strength (default {DEFAULT_ALPHA})"),
    "plausibility": ("plausibility", str, "tokens the contrast chooses from: adaptive (p >= "
                     "beta * p_max of the standard pass, default) or topk"),
    "beta": ("beta", float, f"adaptive plausibility cut (default {DEFAULT_BETA})"),
    "top-k": ("top_k", int, f"top-k plausibility cut (default {DEFAULT_TOP_K})"),
    "local-fraction": ("local_fraction", float, "local window W' as a fraction of the prompt "
                       f"(unconfirmed; default {DEFAULT_LOCAL_FRACTION})"),
    "local-window": ("local_window", int, "local window W' in tokens (instead of a fraction)"),
    "local-base": ("local_base", float, "RoPE base B' of the local-aware variant (instead of "
                   "a window)"),
    "first-pair": ("first_pair", int, "first RoPE pair whose frequency changes (unconfirmed; "
                   "default 0: all)"),
}  # fmt: skip


def add_pcd_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``--pcd-*`` flags (all default to ``None``: PCD's own defaults apply)."""
    for flag, (_, kind, text) in _FLAGS.items():
        choices = PLAUSIBILITY_RULES if flag == "plausibility" else None
        parser.add_argument(f"--pcd-{flag}", type=kind, choices=choices, help=text)


def pcd_from_args(args: argparse.Namespace) -> PcdConfig | None:
    """The :class:`PcdConfig` of the ``--pcd-*`` flags given, ``None`` when none was."""
    given = {
        field: getattr(args, f"pcd_{flag.replace('-', '_')}")
        for flag, (field, _, _) in _FLAGS.items()
    }
    given = {k: v for k, v in given.items() if v is not None}
    return PcdConfig(**given) if given else None
