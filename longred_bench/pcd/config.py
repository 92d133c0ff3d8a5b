"""PCD's parameters (:class:`PcdConfig`, with the ``--pcd-*`` command-line flags that set them)
and the torch-free RoPE arithmetic of its default local base.

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
DEFAULT_TOP_K = 50
LOGLIKELIHOOD_MODES = ("full", "topk")
MIN_WINDOW = 7  # a base B' > 1 needs a longest wavelength above 2 pi


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
    """PCD's parameters (see the module docstring; the unconfirmed ones are marked).

    - ``alpha``: contrast strength (>= 0; 0 gives the base model's greedy output exactly).
    - ``top_k``: plausibility restriction, tokens kept from the top of ``L`` (>= 1).
    - ``local_base``: ``B'`` (unconfirmed); ``None`` derives it from ``local_window``.
    - ``local_window``: the window ``W`` of the default ``B'`` (unconfirmed); ``None``: the
      model's trained window. Give ``local_base`` or ``local_window``, not both.
    - ``first_pair``: first RoPE pair whose frequency changes (unconfirmed; 0 = all pairs).
    - ``loglikelihood``: how requests are scored (unconfirmed, the paper defines no scoring):
      ``full``, log-softmax of the calibrated logits over the whole vocabulary; ``topk``, over the
      top-k set of ``L`` only, tokens outside it scoring ``-inf`` (the decoding distribution).
    """

    alpha: float = DEFAULT_ALPHA
    top_k: int = DEFAULT_TOP_K
    local_base: float | None = None
    local_window: int | None = None
    first_pair: int = 0
    loglikelihood: str = "full"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PcdConfig:
        """Build from a dict, rejecting unknown keys."""
        reject_unknown_keys(cls, data, "PCD")
        return cls(**data)

    def __post_init__(self) -> None:
        coerce = {
            "alpha": _number("alpha", self.alpha, integer=False),
            "top_k": _number("top_k", self.top_k, integer=True),
            "first_pair": _number("first_pair", self.first_pair, integer=True),
        }
        if self.local_base is not None:
            coerce["local_base"] = _number("local_base", self.local_base, integer=False)
        if self.local_window is not None:
            coerce["local_window"] = _number("local_window", self.local_window, integer=True)
        for key, value in coerce.items():
            object.__setattr__(self, key, value)
        if not math.isfinite(self.alpha) or self.alpha < 0:
            raise UserError(f"PCD alpha must be a finite number >= 0, got {self.alpha:g}")
        if self.top_k < 1:
            raise UserError(f"PCD top_k must be at least 1, got {self.top_k}")
        if self.local_base is not None and not (1 < self.local_base < math.inf):
            raise UserError(
                f"PCD local_base must be a finite RoPE base > 1, got {self.local_base:g}"
            )
        if self.local_window is not None and self.local_window < MIN_WINDOW:
            raise UserError(
                f"PCD local_window must be at least {MIN_WINDOW} tokens, got {self.local_window}"
            )
        if self.local_base is not None and self.local_window is not None:
            raise UserError("PCD: give local_base or local_window, not both")
        if self.first_pair < 0:
            raise UserError(f"PCD first_pair must be >= 0, got {self.first_pair}")
        if self.loglikelihood not in LOGLIKELIHOOD_MODES:
            raise UserError(
                f"PCD loglikelihood must be one of {', '.join(LOGLIKELIHOOD_MODES)}, "
                f"got {self.loglikelihood!r}"
            )

    def as_dict(self) -> dict[str, Any]:
        """The parameters as a JSON-able dict (the keys :meth:`from_dict` takes)."""
        return asdict(self)


def trained_window(config: Any) -> int:
    """The window ``config``'s model was trained at: ``original_max_position_embeddings`` of
    its ``rope_parameters`` where recorded (YaRN, llama3), else ``max_position_embeddings``."""
    params = getattr(config, "rope_parameters", None) or {}
    return int(params.get("original_max_position_embeddings") or config.max_position_embeddings)


_FLAGS = {  # --pcd-<flag>: (PcdConfig field, type, help)
    "alpha": ("alpha", float, f"contrast strength (default {DEFAULT_ALPHA})"),
    "top-k": ("top_k", int, f"plausibility restriction: top-k of the standard logits "
              f"(default {DEFAULT_TOP_K})"),
    "local-base": ("local_base", float, "RoPE base B' of the local-aware variant (unconfirmed; "
                   "default: the base whose longest wavelength is the trained window)"),
    "local-window": ("local_window", int, "window W of the default B' (default: the model's "
                     "trained window)"),
    "first-pair": ("first_pair", int, "first RoPE pair whose frequency changes (unconfirmed; "
                   "default 0: all)"),
    "loglikelihood": ("loglikelihood", str, "scoring: full (log-softmax of the calibrated "
                      "logits over the vocabulary, default) or topk (over the top-k set)"),
}  # fmt: skip


def add_pcd_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``--pcd-*`` flags (all default to ``None``: PCD's own defaults apply)."""
    for flag, (_, kind, text) in _FLAGS.items():
        choices = LOGLIKELIHOOD_MODES if flag == "loglikelihood" else None
        parser.add_argument(f"--pcd-{flag}", type=kind, choices=choices, help=text)


def pcd_from_args(args: argparse.Namespace) -> PcdConfig | None:
    """The :class:`PcdConfig` of the ``--pcd-*`` flags given, ``None`` when none was."""
    given = {
        field: getattr(args, f"pcd_{flag.replace('-', '_')}")
        for flag, (field, _, _) in _FLAGS.items()
    }
    given = {k: v for k, v in given.items() if v is not None}
    return PcdConfig(**given) if given else None
