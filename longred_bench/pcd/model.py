"""Positional Contrastive Decoding (PCD; arXiv 2506.08371): the local-aware RoPE variant of a
model, the logit contrast, and greedy decoding and choice scoring with it.

PCD contrasts the model's standard next-token logits ``L`` with the logits ``L_local`` of a
*local-aware* variant of the same weights::

    calibrated = (1 + alpha) * L - alpha * L_local,   on the plausible tokens of L (others -inf)

and decodes greedily from ``calibrated``. The plausible tokens (:func:`plausible`, unconfirmed)
are by default those whose standard-pass probability is at least ``beta`` times the most likely
one's (the adaptive cut of contrastive decoding; ``beta`` 0.1), or the ``top_k`` most likely
(``plausibility="topk"``; the pre-paper code used k = 50). Under the adaptive cut a step where the
standard pass is confident keeps one token, so the contrast changes only uncertain steps.

The variant recomputes the RoPE frequencies ``theta_j = B^(-2j/d)`` (pair ``j = 0 .. d/2-1``,
head size ``d``) with a lower base ``B' < B``, which over-rotates the low-frequency pairs most (the
ratio ``(B/B')^(2j/d)`` grows with ``j``). It is built from the model's own ``rope_parameters``
with ``rope_theta`` set to ``B'``: transformers builds the variant's rotary module from that
config, nothing of its modeling code is copied. Pairs below ``first_pair`` keep the original
frequencies (``first_pair > 0``: only the lower-frequency pairs change).

The local window rule (unconfirmed; :class:`PcdConfig`): ``B'`` is the smallest base whose longest
wavelength, as the model applies its frequencies (RoPE type and scaling included), is at least a
local window ``W'`` (:func:`base_for_window`; for the default RoPE type
``(W' / 2 pi) ** (d / (d - 2))``). ``W'`` is by default a quarter of the prompt
(``local_fraction``; the prompt's length rounded up to 64 tokens), or a fixed number of tokens
(``local_window``); or ``B'`` is given outright (``local_base``). Under ``W'`` every pair still
tells apart the distances inside the local window, and distances beyond it are over-rotated: the
variant sees only what is local, so the contrast favours what the standard pass reads from
further away. A prompt whose ``W'`` reaches the model's longest wavelength has nothing to
over-rotate: its local pass is the standard one and the contrast leaves it as it is. The same
rule holds for every model and extension (no trained-window default that differs by line).

Scoring (:meth:`longred_bench.pcd.lm.PcdLM.loglikelihood`): a continuation (a multiple-choice
answer) scores ``(1 + alpha) * log p(c | x) - alpha * log p_local(c | x)``, the contrast applied
to the two passes' log-likelihoods of exactly the choice's tokens; at ``alpha = 0`` these are the
greedy scores. Rolling perplexity under PCD is not defined (the contrast is not a distribution
over texts) and is reported as ``NaN``.

One model object serves both passes: :meth:`PcdModel.local` swaps a variant's rotary module(s)
in for the duration of a forward pass. The weights are shared; each ``B'`` in use holds one extra
``inv_freq`` buffer (``d/2`` floats). Keys depend on the base, so generation keeps a KV cache per
variant and runs two forward passes per token (about twice the KV memory and compute of greedy
decoding); rows of a batch whose prompts get different ``B'`` run their local pass apart.

Sources (``PCD.md``): the paper confirms that PCD contrasts standard with local-aware logits;
third-party reviews restate the frequencies and ``B' < B``. The contrast formula and
``alpha = 1.5`` come from the first author's pre-paper repository. **Unconfirmed**, so parameters
of :class:`PcdConfig` with documented defaults: the local window rule, ``first_pair``, the
plausibility cut and the choice scoring.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from longred_bench.cache import atomic_write_text
from longred_bench.errors import UserError
from longred_bench.models.loading import original_rope, rotary_config, rotary_modules
from longred_bench.pcd.config import (
    DEFAULT_ALPHA,
    DEFAULT_BETA,
    DEFAULT_TOP_K,
    MIN_WINDOW,
    MOVING_ROPE_TYPES,
    PLAUSIBILITY_RULES,
    PcdConfig,
    trained_window,
)

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_BETA",
    "DEFAULT_TOP_K",
    "PLAUSIBILITY_RULES",
    "PcdConfig",
    "PcdModel",
    "base_for_window",
    "contrast",
    "longest_wavelength",
    "pcd_logits",
    "plausible",
    "trained_window",
    "with_base",
]
# Rope types whose inv_freq is fixed when the module is built (a spliced first_pair survives).
PCD_USE = "PCD's local RoPE variant (a lower RoPE base)"
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


def base_for_window(rotary_cls: type, config: Any, window: int) -> float | None:
    """The smallest RoPE base ``B' < B`` whose longest wavelength is at least ``window`` tokens
    (bisection on ``log B'``; for the default RoPE type, where the wavelength is continuous in
    the base, it is ``(window / 2 pi) ** (d / (d - 2))``); ``None`` when the model's own longest
    wavelength is already within ``window`` (nothing to over-rotate)."""
    if window < MIN_WINDOW:
        raise UserError(f"PCD local window must be at least {MIN_WINDOW} tokens, got {window}")
    base = original_rope(config, PCD_USE).theta
    if longest_wavelength(rotary_cls, config, base) <= window:
        return None
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


def plausible(logits: torch.Tensor, cfg: PcdConfig) -> torch.Tensor:
    """Boolean mask ``[..., vocab]`` of the tokens the contrast may choose from: under
    ``adaptive``, those with ``softmax(logits) >= beta * max softmax(logits)`` (in logits:
    ``logit >= max logit + log beta``); under ``topk``, the ``top_k`` highest (all when
    ``top_k`` exceeds the vocabulary)."""
    logits = logits.float()
    if cfg.plausibility == "adaptive":
        return logits >= logits.amax(-1, keepdim=True) + math.log(cfg.beta)
    k = min(int(cfg.top_k), logits.shape[-1])
    keep = torch.zeros_like(logits, dtype=torch.bool)
    return keep.scatter_(-1, logits.topk(k, dim=-1).indices, True)


def pcd_logits(logits: torch.Tensor, local_logits: torch.Tensor, cfg: PcdConfig) -> torch.Tensor:
    """The logits PCD decodes from: the contrast on the plausible tokens of ``logits``,
    ``-inf`` elsewhere."""
    calibrated = contrast(logits, local_logits, cfg.alpha)
    return calibrated.masked_fill(~plausible(logits, cfg), float("-inf"))


class PcdModel:
    """A causal LM and its local-aware RoPE variants: one model object, a rotary module per
    local base ``B'`` in use (built on first use)."""

    def __init__(self, model: Any, cfg: PcdConfig) -> None:
        config = model.config
        self.model = model
        self.config = cfg
        self.base = original_rope(config, PCD_USE).theta
        self._rotaries = rotary_modules(model)
        self._rotary_cls = type(self._rotaries[0][2])
        pairs = min(module.inv_freq.numel() for *_, module in self._rotaries)
        if cfg.first_pair >= pairs:
            raise UserError(
                f"PCD first_pair {cfg.first_pair} is past the model's last RoPE pair ({pairs - 1})"
            )
        rope_type = config.rope_parameters.get("rope_type", "default")
        if rope_type in MOVING_ROPE_TYPES:  # one RoPE for every layer: original_rope says so
            raise UserError(
                f"PCD needs a RoPE type whose frequencies are fixed: the model's is "
                f"{rope_type!r}, which rescales them with the prompt's length, so PCD's local "
                "window would not be the one it records; use greedy decoding, or another RoPE"
            )
        if cfg.first_pair and rope_type not in _STATIC_ROPE_TYPES:
            raise UserError(
                f"PCD first_pair > 0 needs a RoPE type with fixed frequencies "
                f"({', '.join(_STATIC_ROPE_TYPES)}), not {rope_type!r}"
            )
        if cfg.local_base is not None and cfg.local_base >= self.base:
            raise UserError(
                f"PCD local base {cfg.local_base:g} is not below the model's RoPE base "
                f"{self.base:g}: pass a smaller local_base (or a local window)"
            )
        self._bases: dict[int, float | None] = {}  # W' -> B' (None: nothing to over-rotate)
        self._locals: dict[float, list[torch.nn.Module]] = {}
        self._windows_file: Path | None = None
        self._windows_run = ""

    def keep_windows(self, path: Path, run: str) -> None:
        """Write each local window ``W'`` to ``path`` (JSON: ``{run: [W', ...]}``) as it is
        first used, under ``run`` (a key of the evaluation's settings: its tasks, lengths,
        documents), and take the ones an earlier, interrupted call of the same ``run`` wrote
        there: a resumed run answers those windows' requests from its response cache without
        running them, and :meth:`resolved` still lists them as run. Another run sharing the
        responses (other lengths) lists only its own windows, never one it did not use."""
        self._windows_file, self._windows_run = path, run
        for window in self._kept_windows().get(run, []):
            self._bases[window] = base_for_window(self._rotary_cls, self.model.config, window)

    def _kept_windows(self) -> dict[str, list[int]]:
        """The windows file's runs (empty where there is none)."""
        path = self._windows_file
        if path is None or not path.is_file():
            return {}
        try:
            kept = json.loads(path.read_text())
            if not isinstance(kept, dict):
                raise TypeError("not a mapping of runs")
            return {str(k): [int(w) for w in v] for k, v in kept.items()}
        except (ValueError, TypeError, UnicodeDecodeError) as exc:
            raise UserError(
                f"{path} (the PCD local windows of saved responses) is unreadable ({exc}): "
                "delete it and its responses (the requests folder beside it) and run again"
            ) from None

    def base_for(self, prompt_tokens: int) -> float | None:
        """``B'`` for a prompt of ``prompt_tokens`` tokens under the config's window rule;
        ``None`` when its window reaches the model's longest wavelength (no local variant)."""
        window = self.config.window_for(prompt_tokens)
        if window is None:
            return float(self.config.local_base)
        if window not in self._bases:
            self._bases[window] = base_for_window(self._rotary_cls, self.model.config, window)
            if self._windows_file is not None:
                kept = {**self._kept_windows(), self._windows_run: sorted(self._bases)}
                self._windows_file.parent.mkdir(parents=True, exist_ok=True)
                atomic_write_text(self._windows_file, json.dumps(kept, sort_keys=True))
        return self._bases[window]

    def rows_by_base(self, prompt_lengths: list[int]) -> dict[float, list[int]]:
        """Indices of ``prompt_lengths`` grouped by their local base ``B'`` (prompts with no local
        variant left out): the rows whose local pass can run together."""
        groups: dict[float, list[int]] = {}
        for i, n in enumerate(prompt_lengths):
            base = self.base_for(int(n))
            if base is not None:
                groups.setdefault(base, []).append(i)
        return groups

    def resolved(self) -> dict[str, Any]:
        """The parameters as run: the config, its window rule, and each local window ``W'`` used
        so far with its base ``B'`` (``local``, sorted by ``W'``; ``None`` where nothing was
        over-rotated; under a ``local_base`` rule ``W'`` is that base's longest wavelength)."""
        if self.config.local_base is not None:
            cfg = self.model.config
            wave = longest_wavelength(self._rotary_cls, cfg, self.config.local_base)
            local = [{"window": round(wave, 1), "base": self.config.local_base}]
        else:
            local = [{"window": w, "base": b} for w, b in sorted(self._bases.items())]
        return {**self.config.as_dict(), "base": self.base,
                "window_rule": self.config.window_rule(), "local": local}  # fmt: skip

    def local_rotaries(self, local_base: float) -> list[torch.nn.Module]:
        """The variant's rotary modules for ``local_base`` (one per rotary module of the
        model), built from the config the model's own are (:func:`rotary_config`: for dynamic
        NTK its original window) with that base; pairs below ``first_pair`` keep the model's
        frequencies."""
        if local_base not in self._locals:
            local_config = with_base(rotary_config(self.model.config), local_base)
            first = self.config.first_pair
            built = []
            for *_, module in self._rotaries:
                local = type(module)(config=local_config).to(module.inv_freq.device)
                for name in ("inv_freq", "original_inv_freq"):
                    if first and hasattr(local, name):
                        getattr(local, name)[:first] = getattr(module, name)[:first]
                built.append(local)
            self._locals[local_base] = built
        return self._locals[local_base]

    @contextlib.contextmanager
    def local(self, local_base: float) -> Iterator[None]:
        """Within the block the model runs with the local-aware RoPE of base ``local_base``;
        restored on exit."""
        for (parent, attr, module), local in zip(
            self._rotaries, self.local_rotaries(local_base), strict=True
        ):
            setattr(parent, attr, local.to(module.inv_freq.device))
        try:
            yield
        finally:
            for parent, attr, module in self._rotaries:
                setattr(parent, attr, module)

    def _forward(self, local_base: float | None, **inputs: Any) -> Any:
        with self.local(local_base) if local_base else contextlib.nullcontext():
            return self.model(**inputs)

    @torch.no_grad()
    def logits_pair(
        self, input_ids: torch.Tensor, prompt_tokens: int | None = None, **inputs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(L, L_local)``: the logits of ``input_ids`` ``[batch, seq]`` under both RoPEs, the
        local base chosen for a prompt of ``prompt_tokens`` tokens (default: ``seq``);
        ``L_local`` is ``L`` when that prompt has no local variant."""
        logits = self._forward(None, input_ids=input_ids, **inputs).logits
        base = self.base_for(prompt_tokens or input_ids.shape[1])
        if base is None:
            return logits, logits
        return logits, self._forward(base, input_ids=input_ids, **inputs).logits

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
        transformers' ``generate`` does. Each row's local base follows from its own prompt
        length; the rows of one base share a KV cache, the standard pass has its own. At
        ``alpha = 0`` no local pass runs (the output is greedy decoding's).
        """
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        mask = attention_mask.long()
        positions = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)
        groups = self.rows_by_base(mask.sum(-1).tolist()) if self.config.alpha > 0 else {}
        rows = {b: torch.tensor(r, device=input_ids.device) for b, r in groups.items()}
        caches: dict[float | None, Any] = dict.fromkeys([None, *groups])
        step_ids, out = input_ids, input_ids
        done = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        generated: list[list[int]] = [[] for _ in range(input_ids.shape[0])]
        for _ in range(max(int(max_new_tokens), 0)):
            standard = local = torch.empty(0)
            for base, idx in [(None, None), *rows.items()]:
                inputs = {"input_ids": step_ids, "attention_mask": mask, "position_ids": positions}
                if idx is not None:
                    inputs = {k: v[idx] for k, v in inputs.items()}
                inputs[cache_argument(self.model)] = caches[base]
                res = self._forward(base, **inputs, use_cache=True, logits_to_keep=1)
                caches[base] = returned_cache(res)
                if idx is None:
                    standard = res.logits[:, -1]
                    local = standard.clone()
                else:
                    local[idx] = res.logits[:, -1].to(local.dtype)
            chosen = pcd_logits(standard, local, self.config).argmax(-1)
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


def cache_argument(model: torch.nn.Module) -> str:
    """The name under which ``model``'s forward takes a KV cache: ``cache`` from transformers
    5.24 on (``past_key_values`` is deprecated there, to be removed in 5.40),
    ``past_key_values`` before; a name its forward does not list would land in ``**kwargs``
    and be ignored."""
    import inspect

    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def returned_cache(output: Any) -> Any:
    """The KV cache a forward with ``use_cache=True`` returned (``cache``, or
    ``past_key_values`` before transformers 5.24)."""
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values
