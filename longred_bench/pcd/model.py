"""Positional Contrastive Decoding (PCD; arXiv 2506.08371): the local-aware RoPE variant of a
model, the logit contrast, and greedy decoding with it.

PCD contrasts the model's standard next-token logits ``L`` with the logits ``L_local`` of a
*local-aware* variant of the same weights::

    calibrated = (1 + alpha) * L - alpha * L_local,   kept on the top_k tokens of L (others -inf)

and decodes greedily from ``calibrated``. The variant recomputes the RoPE frequencies
``theta_j = B^(-2j/d)`` (pair ``j = 0 .. d/2-1``, head size ``d``) with a lower base ``B' < B``,
which over-rotates the low-frequency pairs most (the ratio ``(B/B')^(2j/d)`` grows with ``j``), so
the variant attends more locally. It is built from the model's own ``rope_parameters`` with
``rope_theta`` set to ``B'``: transformers builds the variant's rotary module from that config,
nothing of its modeling code is copied. Pairs below ``first_pair`` keep the original frequencies.

One model object serves both passes: :meth:`PcdModel.local` swaps the variant's rotary module(s)
in for the duration of a forward pass. The weights are shared; the variant holds one extra
``inv_freq`` buffer (``d/2`` floats). Keys depend on the base, so generation keeps two KV caches
and runs two forward passes per token (about twice the KV memory and compute of greedy decoding).

Sources (``PCD.md``): the paper confirms that PCD contrasts standard with local-aware logits;
third-party reviews restate the frequencies and ``B' < B``. The contrast formula, ``alpha = 1.5``
and ``top_k`` (50 or 100; 50 here) come from the first author's pre-paper repository, not from
the paper. **Unconfirmed**, so parameters of :class:`PcdConfig` with documented defaults: ``B'``
(``local_base`` / ``local_window``), whether only pairs from a split index on change
(``first_pair``, default 0: all), and what PCD means for scoring (``loglikelihood``).

Default ``B'``: the smallest base whose longest RoPE wavelength, as the model applies its
frequencies (its RoPE type and scaling included), is at least the model's trained window ``W``
(:func:`base_for_window`); for the default RoPE type that is ``(W / 2 pi) ** (d / (d - 2))``
exactly, e.g. 1,643 for SmolLM2-135M (``d`` 64, ``W`` 8,192, ``B`` 1e5). Why: under it the
slowest pair turns once over ``W`` tokens, so every pair still tells apart all distances inside
one trained window, while none stays nearly constant across the context, as the low-frequency
pairs of the original base do (they carry the distance-insensitive, long-range part of
attention); distances beyond ``W`` are over-rotated, which is the local-aware behaviour. It is a
scale the model knows (its own training window), needs no tuning, and is the same for a model
and its ABF extensions. ``W`` is ``rope_parameters["original_max_position_embeddings"]`` where
the config records it (YaRN, llama3), else ``max_position_embeddings``; for a zero-shot ``rope``
extension the callers pass the original model's window. With ``first_pair > 0`` the base is
chosen as if every pair changed; the pairs below ``first_pair`` then keep their frequencies.
"""

from __future__ import annotations

import contextlib
import copy
import math
from collections.abc import Callable, Iterator
from typing import Any

import torch

from longred_bench.errors import UserError
from longred_bench.models.loading import original_rope, rotary_modules
from longred_bench.pcd.config import (
    DEFAULT_ALPHA,
    DEFAULT_TOP_K,
    LOGLIKELIHOOD_MODES,
    MIN_WINDOW,
    PcdConfig,
    trained_window,
)

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_TOP_K",
    "LOGLIKELIHOOD_MODES",
    "PcdConfig",
    "PcdModel",
    "base_for_window",
    "contrast",
    "longest_wavelength",
    "pcd_logits",
    "restrict_top_k",
    "score_logits",
    "trained_window",
    "with_base",
]
# Rope types whose inv_freq is fixed when the module is built (a spliced first_pair survives).
_STATIC_ROPE_TYPES = ("default", "linear", "yarn", "llama3")
_BISECTIONS = 64


def with_base(config: Any, base: float) -> Any:
    """A deep copy of ``config`` whose ``rope_parameters`` have ``rope_theta = base``."""
    new = copy.deepcopy(config)
    new.rope_parameters = {**dict(config.rope_parameters), "rope_theta": float(base)}
    return new


def longest_wavelength(rotary_cls: type, config: Any, base: float) -> float:
    """``2 pi / min(inv_freq)`` in tokens of ``rotary_cls`` built from ``config`` with RoPE
    base ``base`` (the model's own RoPE type and scaling applied)."""
    inv_freq = rotary_cls(config=with_base(config, base)).inv_freq
    return float(2 * math.pi / inv_freq.min())


def base_for_window(rotary_cls: type, config: Any, window: int) -> float:
    """The smallest RoPE base ``B' < B`` whose longest wavelength is at least ``window`` tokens
    (bisection on ``log B'``; for the default RoPE type, where the wavelength is continuous in
    the base, it is ``(window / 2 pi) ** (d / (d - 2))``)."""
    if window < MIN_WINDOW:
        raise UserError(f"PCD local window must be at least {MIN_WINDOW} tokens, got {window}")
    base = original_rope(config).theta
    longest = longest_wavelength(rotary_cls, config, base)
    if longest <= window:
        raise UserError(
            f"the model's longest RoPE wavelength ({longest:.0f} tokens) is already within the "
            f"PCD local window {window}: pass a smaller local_window or a local_base"
        )
    lo, hi = 0.0, math.log(base)
    for _ in range(_BISECTIONS):
        mid = (lo + hi) / 2
        if longest_wavelength(rotary_cls, config, math.exp(mid)) < window:
            lo = mid
        else:
            hi = mid
    return math.exp(hi)


def contrast(logits: torch.Tensor, local_logits: torch.Tensor, alpha: float) -> torch.Tensor:
    """``(1 + alpha) * logits - alpha * local_logits`` in fp32; shapes ``[..., vocab]``."""
    calibrated = logits.float() * (1.0 + alpha)  # a new tensor: the inputs stay as they are
    return calibrated.sub_(local_logits.float(), alpha=alpha)


def restrict_top_k(calibrated: torch.Tensor, logits: torch.Tensor, k: int) -> torch.Tensor:
    """``calibrated`` on the ``k`` highest entries of ``logits`` (last dim), ``-inf`` elsewhere."""
    k = min(int(k), logits.shape[-1])
    keep = torch.zeros_like(calibrated, dtype=torch.bool)
    keep.scatter_(-1, logits.topk(k, dim=-1).indices, True)
    return calibrated.masked_fill(~keep, float("-inf"))


def pcd_logits(
    logits: torch.Tensor, local_logits: torch.Tensor, alpha: float, top_k: int
) -> torch.Tensor:
    """The logits PCD decodes from: the contrast restricted to the top-k of ``logits``."""
    return restrict_top_k(contrast(logits, local_logits, alpha), logits, top_k)


def score_logits(logits: torch.Tensor, local_logits: torch.Tensor, cfg: PcdConfig) -> torch.Tensor:
    """The logits whose log-softmax scores a request under ``cfg.loglikelihood``."""
    if cfg.loglikelihood == "topk":
        return pcd_logits(logits, local_logits, cfg.alpha, cfg.top_k)
    return contrast(logits, local_logits, cfg.alpha)


class PcdModel:
    """A causal LM and its local-aware RoPE variant: one model object, two rotary modules.

    ``default_window`` is the trained window ``W`` when the caller knows better than the config
    (a zero-shot extension: the original model's window); ``cfg.local_window`` overrides it.
    """

    def __init__(self, model: Any, cfg: PcdConfig, *, default_window: int | None = None) -> None:
        config = model.config
        base = original_rope(config).theta
        rotaries = rotary_modules(model)
        self.local_window: int | None = None
        if cfg.local_base is not None:
            local_base = float(cfg.local_base)
        else:
            self.local_window = int(cfg.local_window or default_window or trained_window(config))
            local_base = base_for_window(type(rotaries[0][2]), config, self.local_window)
        if local_base >= base:
            raise UserError(
                f"PCD local base {local_base:g} is not below the model's RoPE base {base:g}: "
                "pass a smaller local_base (or local_window)"
            )
        pairs = min(module.inv_freq.numel() for *_, module in rotaries)
        if cfg.first_pair >= pairs:
            raise UserError(
                f"PCD first_pair {cfg.first_pair} is past the model's last RoPE pair ({pairs - 1})"
            )
        rope_type = config.rope_parameters.get("rope_type", "default")
        if cfg.first_pair and rope_type not in _STATIC_ROPE_TYPES:
            raise UserError(
                f"PCD first_pair > 0 needs a RoPE type with fixed frequencies "
                f"({', '.join(_STATIC_ROPE_TYPES)}), not {rope_type!r}"
            )
        local_config = with_base(config, local_base)
        self._swaps = []
        for parent, attr, module in rotaries:
            local = type(module)(config=local_config).to(module.inv_freq.device)
            for name in ("inv_freq", "original_inv_freq"):
                if cfg.first_pair and hasattr(local, name):
                    getattr(local, name)[: cfg.first_pair] = getattr(module, name)[: cfg.first_pair]
            self._swaps.append((parent, attr, module, local))
        self.model = model
        self.config = cfg
        self.base = base
        self.local_base = local_base

    def resolved(self) -> dict[str, Any]:
        """The parameters as run: ``cfg`` with ``local_base`` and ``local_window`` resolved."""
        return {**self.config.as_dict(), "local_base": self.local_base,
                "local_window": self.local_window}  # fmt: skip

    def local_rotaries(self) -> list[torch.nn.Module]:
        """The variant's rotary modules (one per rotary module of the model)."""
        return [local for *_, local in self._swaps]

    @contextlib.contextmanager
    def local(self) -> Iterator[None]:
        """Within the block the model runs with the local-aware RoPE; restored on exit."""
        for parent, attr, base, local in self._swaps:
            setattr(parent, attr, local.to(base.inv_freq.device))
        try:
            yield
        finally:
            for parent, attr, base, _ in self._swaps:
                setattr(parent, attr, base)

    def _forward(self, local: bool, **inputs: Any) -> Any:
        with self.local() if local else contextlib.nullcontext():
            return self.model(**inputs)

    @torch.no_grad()
    def logits_pair(self, input_ids: torch.Tensor, **inputs: Any) -> tuple[torch.Tensor, ...]:
        """``(L, L_local)``: the logits of ``input_ids`` ``[batch, seq]`` under both RoPEs."""
        return tuple(self._forward(v, input_ids=input_ids, **inputs).logits for v in (0, 1))

    @torch.no_grad()
    def generate(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        max_new_tokens: int,
        pad_token_id: int,
        is_done: Callable[[list[int]], bool] | None = None,
    ) -> torch.Tensor:
        """Greedy PCD decoding of left-padded ``input_ids`` ``[batch, seq]``.

        Returns ``[batch, seq + n]`` (prompt then ``n <= max_new_tokens`` tokens). A row stops
        when ``is_done(its generated ids)`` is true and is padded with ``pad_token_id`` until
        every row has stopped. Positions count real tokens only (left padding ignored), as
        transformers' ``generate`` does; each RoPE variant keeps its own KV cache.
        """
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        mask = attention_mask.long()
        positions = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)
        caches: list[Any] = [None, None]
        step_ids, out = input_ids, input_ids
        done = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        generated: list[list[int]] = [[] for _ in range(input_ids.shape[0])]
        for _ in range(max(int(max_new_tokens), 0)):
            last = []
            for variant in (0, 1):
                res = self._forward(
                    bool(variant), input_ids=step_ids, attention_mask=mask,
                    position_ids=positions, past_key_values=caches[variant], use_cache=True,
                    logits_to_keep=1,
                )  # fmt: skip
                caches[variant] = res.past_key_values
                last.append(res.logits[:, -1])
            cfg = self.config
            chosen = pcd_logits(last[0], last[1], cfg.alpha, cfg.top_k).argmax(-1)
            chosen = chosen.masked_fill(done, pad_token_id)
            out = torch.cat([out, chosen[:, None]], dim=1)
            for row, token in enumerate(chosen.tolist()):
                if not done[row]:
                    generated[row].append(token)
                    done[row] = bool(is_done is not None and is_done(generated[row]))
            if bool(done.all()):
                break
            step_ids = chosen[:, None]
            mask = torch.cat([mask, mask.new_ones(mask.shape[0], 1)], dim=1)
            positions = positions[:, -1:] + 1
        return out
