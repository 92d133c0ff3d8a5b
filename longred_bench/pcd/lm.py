"""The ``longred-pcd`` lm-eval model: lm-eval's ``HFLM`` scoring and generating with PCD.

Importing this module registers ``longred-pcd`` with lm-eval, after ``import lm_eval.models`` so
that lm-eval's own models (``hf``, ``vllm``, ...) stay registered. Requests run as ``HFLM`` runs
them (batching, truncation, stop sequences); only the two model calls change:

- generation (``generate_until``): greedy PCD decoding
  (:meth:`longred_bench.pcd.model.PcdModel.generate`, two KV caches); a task that asks for
  sampling is refused;
- scoring (``loglikelihood``): each continuation scores
  ``(1 + alpha) * log p(c | x) - alpha * log p_local(c | x)``, the contrast of the two passes'
  log-likelihoods of its own tokens (``is_greedy`` is the standard pass's); at ``alpha = 0`` the
  scores are ``HFLM``'s. Requests are run through ``HFLM`` twice, the second time under the local
  base of their length (:meth:`longred_bench.pcd.model.PcdModel.base_for`);
- ``loglikelihood_rolling`` (perplexity of whole texts) is not defined under PCD: every request
  gets ``NaN``, so a perplexity under PCD reads as not defined, never as a number.

Model arguments: ``pretrained`` (a model spec: zoo name, HF directory, ``.gguf`` file or hub id,
loaded by :func:`longred_bench.models.loading.load`; or a loaded model with ``tokenizer``), ``rope``
(a zero-shot RoPE extension spec), the PCD parameters (the fields of
:class:`longred_bench.pcd.config.PcdConfig`: ``alpha``, ``plausibility``, ``beta``, ``top_k``,
``local_fraction``, ``local_window``, ``local_base``, ``first_pair``), and ``max_length``,
``batch_size``, ``max_batch_size``, ``device``, ``dtype``, ``trust_remote_code``,
``add_bos_token``. Anything else is refused (lm-eval would otherwise drop it silently for a
loaded model).

lm-eval 0.4.13 finds no model outside its own package, so its command line runs this one through
the console script ``longred-lm-eval`` (:mod:`longred_bench.evaluation.lm_eval_cli`, e.g.
``longred-lm-eval --model longred-pcd ...``); later lm-eval versions find it through the
``lm_eval.models`` entry point. From Python, import this module and call
``lm_eval.simple_evaluate(model="longred-pcd", ...)``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import lm_eval.models  # noqa: F401  (lm-eval's own models first: registering before hides them)
import torch
from lm_eval.api.model import CacheHook
from lm_eval.api.registry import register_model
from lm_eval.models.huggingface import HFLM

from longred_bench.errors import UserError
from longred_bench.pcd.hflm_notes import HFLM_GIVEN_A_MODEL, dropped
from longred_bench.pcd.model import PcdConfig, PcdModel

MODEL_NAME = "longred-pcd"
CACHE_CHUNK = 256
"""Requests scored per round of passes; each round's contrast scores reach the response cache
together, so an interrupted run keeps all but the round it was in."""
log = logging.getLogger(__name__)


def _device(device: str | None) -> str:
    """``device``, or ``cpu`` (with a warning) for a CUDA device on a machine without one, as
    lm-eval's command line asks for ``cuda:0`` unless told otherwise."""
    device = device or "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        log.warning("%s: no CUDA device here; running on cpu instead of %s", MODEL_NAME, device)
        return "cpu"
    return device


def _dtype(dtype: str | torch.dtype) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype == "auto":
        return torch.float32
    value = getattr(torch, str(dtype), None)
    if not isinstance(value, torch.dtype):
        raise UserError(f"{MODEL_NAME}: unknown dtype {dtype!r} (use float32, bfloat16, ...)")
    return value


def _load(
    spec: str, rope: str | None, device: str, dtype: torch.dtype, trust_remote_code: bool
) -> tuple[Any, Any]:
    """(model, tokenizer) of ``spec``, extended by ``rope`` when given."""
    from longred_bench.models.loading import extend, load

    loaded = load(spec, device=device, dtype=dtype, trust_remote_code=trust_remote_code)
    model = loaded.model if rope is None else extend(loaded.model, rope).eval()
    return model, loaded.tokenizer


@register_model(MODEL_NAME)
class PcdLM(HFLM):
    """``HFLM`` with Positional Contrastive Decoding (see the module docstring)."""

    def __init__(
        self,
        pretrained: Any,
        tokenizer: Any = None,
        rope: str | None = None,
        max_length: int | None = None,
        batch_size: int | str = 1,
        max_batch_size: int = 64,
        device: str | None = "cpu",
        dtype: str | torch.dtype = "float32",
        trust_remote_code: bool = False,
        add_bos_token: bool | None = None,
        **unknown: Any,
    ) -> None:
        pcd_fields = list(PcdConfig.__dataclass_fields__)
        pcd_args = {k: unknown.pop(k) for k in list(unknown) if k in pcd_fields}
        if unknown:
            raise UserError(
                f"{MODEL_NAME}: unknown model argument(s) {', '.join(sorted(unknown))}; known: "
                "pretrained, tokenizer, rope, max_length, batch_size, max_batch_size, device, "
                f"dtype, trust_remote_code, add_bos_token, {', '.join(pcd_fields)}"
            )
        cfg = PcdConfig(**pcd_args)
        if isinstance(pretrained, str) and not pretrained.strip():  # "" would load "."
            raise UserError(f"{MODEL_NAME}: pretrained= is empty (a `$(longred-bench models "
                            "--path NAME)` that failed?): give a zoo name, a model folder, a "
                            ".gguf file or a hub id")  # fmt: skip
        if isinstance(pretrained, str):
            if tokenizer is not None:
                raise UserError(f"{MODEL_NAME}: tokenizer= is only for an already loaded model")
            pretrained, tokenizer = _load(
                pretrained, rope, _device(device), _dtype(dtype), bool(trust_remote_code)
            )
        elif rope is not None or tokenizer is None:
            raise UserError(
                f"{MODEL_NAME}: a loaded model needs tokenizer= and takes no rope= "
                "(extend it first, longred_bench.models.loading.extend)"
            )
        self.pcd = PcdModel(pretrained, cfg)
        with dropped(HFLM_GIVEN_A_MODEL):  # the model is the suite's, loaded here on purpose
            super().__init__(
                pretrained=pretrained,
                tokenizer=tokenizer,
                max_length=max_length,
                batch_size=batch_size,
                max_batch_size=max_batch_size,
                add_bos_token=add_bos_token,
            )
        if self.backend != "causal":
            raise UserError(f"{MODEL_NAME} is for decoder-only models, not {self.backend}")

    def _loglikelihood_tokens(
        self,
        requests: list[tuple[tuple[str, str], list[int], list[int]]],
        disable_tqdm: bool = False,
        override_bs: int | None = None,
    ) -> list[tuple[float, bool]]:
        """Contrast scores of ``requests`` (see the module docstring): ``HFLM``'s scores, and,
        when ``alpha > 0``, ``HFLM``'s scores again under each request's local base. Only the
        contrast scores reach lm-eval's response cache (``--out``'s ``requests/``): the passes'
        own scores, which ``HFLM`` writes as it computes them, would be read back as answers by
        a run resumed after an interruption between them."""
        hook, self.cache_hook = self.cache_hook, CacheHook(None)
        out: list[Any] = [None] * len(requests)
        # longest first, in chunks, each chunk's answers cached as soon as they are final
        order = sorted(range(len(requests)), key=lambda i: -len(requests[i][1] + requests[i][2]))
        try:
            for start in range(0, len(order), CACHE_CHUNK):
                index = order[start : start + CACHE_CHUNK]
                got = self._contrast_scores([requests[i] for i in index], disable_tqdm, override_bs)
                for i, answer in zip(index, got, strict=True):
                    out[i] = answer
                    if requests[i][0] is not None:
                        hook.add_partial("loglikelihood", requests[i][0], answer)
        finally:
            self.cache_hook = hook
        return out

    def _contrast_scores(
        self,
        requests: list[tuple[tuple[str, str], list[int], list[int]]],
        disable_tqdm: bool,
        override_bs: int | None,
    ) -> list[tuple[float, bool]]:
        standard = super()._loglikelihood_tokens(requests, disable_tqdm, override_bs)
        alpha = self.pcd.config.alpha
        if alpha == 0:
            return standard
        local = [score for score, _ in standard]  # no local variant: the contrast is the score
        # lm-eval scores the last max_length + 1 tokens of a longer request: its local window
        # follows the tokens the model sees, not the untruncated request.
        cap = self.max_length + 1
        groups = self.pcd.rows_by_base([min(len(c) + len(t), cap) for _, c, t in requests])
        for base, index in groups.items():
            with self.pcd.local(base):
                got = super()._loglikelihood_tokens([requests[i] for i in index], True, override_bs)
            for i, (score, _) in zip(index, got, strict=True):
                local[i] = score
        return [((1 + alpha) * s - alpha * ls, g) for (s, g), ls in zip(standard, local,
                                                                         strict=True)]  # fmt: skip

    def loglikelihood_rolling(self, requests: list[Any], disable_tqdm: bool = False) -> list[float]:
        """``NaN`` for every request: rolling perplexity is not defined under PCD."""
        return [float("nan")] * len(requests)

    def _stop_check(self, stop: list[str]) -> Callable[[list[int]], bool]:
        """True once the generated ids end in the end-of-text token or contain a stop string."""

        def is_done(ids: list[int]) -> bool:
            if ids[-1] == self.eot_token_id:
                return True
            text = self.tok_decode(ids, skip_special_tokens=False)
            return any(s and s in text for s in stop)

        return is_done

    def _model_generate(
        self, context: torch.Tensor, max_length: int, stop: list[str], **generation_kwargs: Any
    ) -> torch.Tensor:
        """Greedy PCD continuation of the left-padded ``context`` up to ``max_length`` tokens."""
        attention_mask = generation_kwargs.pop("attention_mask", None)
        temperature = float(generation_kwargs.get("temperature") or 0.0)
        if generation_kwargs.get("do_sample") or temperature > 0:
            raise UserError(
                f"{MODEL_NAME} decodes greedily; this task asks for sampling "
                f"(do_sample={generation_kwargs.get('do_sample')}, temperature={temperature:g}): "
                "set do_sample=False, temperature=0 in its generation_kwargs"
            )
        with torch.autocast(
            device_type=self.device.type,
            dtype=self.mixed_precision_dtype,
            enabled=self.mixed_precision_dtype is not None,
        ):
            return self.pcd.generate(
                context,
                attention_mask,
                max_new_tokens=max_length - context.shape[1],
                pad_token_id=self.tokenizer.pad_token_id,
                is_done=self._stop_check(stop),
            )

    def get_model_info(self) -> dict[str, Any]:
        """lm-eval's model info plus the PCD parameters as run."""
        return {**super().get_model_info(), "pcd": self.pcd.resolved()}
