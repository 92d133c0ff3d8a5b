"""The model an evaluation runs, resolved once before the harness (:func:`open_model`): the
backend and the decoding are chosen here, and the model's window is known here.

``hf`` loads the model once (:func:`longred_bench.models.loading.load`, so a RoPE extension is
applied to the weights evaluated) and serves it through lm-eval's ``HFLM`` or, with
``decoding="pcd"``, the ``longred-pcd`` model (:mod:`longred_bench.pcd.lm`); ``vllm`` reads the
config alone and serves lm-eval's ``vllm`` model with the same RoPE override
(:mod:`longred_bench.evaluation.vllm`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from longred_bench.errors import UserError
from longred_bench.pcd.config import PcdConfig

DECODINGS = ("greedy", "pcd")


def check_decoding(decoding: str, pcd: PcdConfig | None, *, backend: str, suite: str) -> None:
    """Raise :class:`UserError` for a decoding this evaluation cannot run."""
    if decoding not in DECODINGS:
        raise UserError(f"unknown decoding {decoding!r}; decodings: {', '.join(DECODINGS)}")
    if pcd is not None and decoding != "pcd":
        raise UserError("PCD parameters given without --decoding pcd")
    if decoding == "pcd" and backend != "hf":
        raise UserError("--decoding pcd runs on the hf backend only (it swaps RoPE per forward)")
    if decoding == "pcd" and suite == "ppl":
        raise UserError("--decoding pcd is for the lm-eval suites; the ppl suite has no decoding")


@dataclass
class EvalModel:
    """One evaluation's model: its spec and RoPE, backend, decoding (and PCD's parameters),
    device, the loaded model (``hf``; None with ``vllm``) and its window (the extended one with a
    RoPE spec) and the dtype it runs in."""

    spec: str
    rope: str | None
    backend: str
    decoding: str
    pcd: PcdConfig | None
    device: str
    loaded: Any
    window: int
    dtype: str = "float32"

    def lm(self, *, window: int, batch_size: int | str, seed: int) -> Any:
        """The ``lm_eval.api.model.LM`` that evaluates at ``window`` tokens (one request a pass
        for a dynamic-RoPE model, :func:`one_request_a_pass`, whatever ``batch_size``)."""
        if self.backend == "vllm":
            from longred_bench.evaluation.vllm import vllm_lm

            return vllm_lm(self.spec, rope=self.rope, max_length=window, batch_size=batch_size,
                           seed=seed, device=self.device)  # fmt: skip
        if self.loaded is not None and one_request_a_pass(self.loaded.model.config):
            batch_size = 1
        if self.decoding == "pcd":
            from longred_bench.pcd.lm import PcdLM

            return PcdLM(pretrained=self.loaded.model, tokenizer=self.loaded.tokenizer,
                         max_length=window, batch_size=batch_size,
                         **(self.pcd or PcdConfig()).as_dict())  # fmt: skip
        from lm_eval.models.huggingface import HFLM

        return HFLM(pretrained=self.loaded.model, tokenizer=self.loaded.tokenizer,
                    max_length=window, batch_size=batch_size, device=self.device)  # fmt: skip

    def ran_with(self, lm: Any) -> Any:
        """The config the model actually ran with (vLLM: the engine's, overrides applied)."""
        if self.loaded is not None:
            return lm.model.config
        return lm.model.llm_engine.model_config.hf_config

    def close(self, lm: Any) -> None:
        """Stop a vLLM engine's worker process now rather than at interpreter exit."""
        core = getattr(getattr(lm.model, "llm_engine", None), "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            core.shutdown()


def one_request_a_pass(config: Any) -> bool:
    """Whether a model of ``config`` must score one request a forward pass: dynamic NTK RoPE
    takes its base from the longest sequence of the pass, so a request inside the window batched
    with a longer one would be scored at the scaled base (its score would depend on its batch)."""
    params = getattr(config, "rope_parameters", None) or {}
    return params.get("rope_type") == "dynamic"


def open_model(cfg: Any) -> EvalModel:
    """The model of evaluation ``cfg`` (:class:`~longred_bench.evaluation.config.EvalConfig`):
    loaded once with ``hf``, its config read with ``vllm``; its window."""
    if cfg.backend == "vllm":
        from longred_bench.evaluation.vllm import default_window

        return EvalModel(cfg.model, cfg.rope, "vllm", cfg.decoding, cfg.pcd, cfg.device, None,
                         default_window(cfg.model, cfg.rope))  # fmt: skip
    import torch

    from longred_bench.models.loading import load

    dtype = cfg.resolved_dtype()
    loaded = load(cfg.model, rope=cfg.rope, device=cfg.device, dtype=getattr(torch, dtype))
    window = int(getattr(loaded.model.config, "max_position_embeddings", 0) or 2048)
    return EvalModel(cfg.model, cfg.rope, "hf", cfg.decoding, cfg.pcd, cfg.device, loaded, window,
                     dtype)  # fmt: skip
