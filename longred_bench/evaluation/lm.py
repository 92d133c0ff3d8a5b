"""The lm-eval model an evaluation runs: ``HFLM`` over the loaded model, lm-eval's ``vllm``
(:mod:`longred_bench.evaluation.vllm`) or, with ``decoding="pcd"``, ``longred-pcd``
(:mod:`longred_bench.pcd.lm`) over the same loaded model."""

from __future__ import annotations

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


def build_lm(
    backend: str,
    model_spec: str,
    *,
    rope: str | None,
    loaded: Any,
    window: int,
    batch_size: int | str,
    seed: int,
    device: str,
    decoding: str = "greedy",
    pcd: PcdConfig | None = None,
) -> Any:
    """The ``lm_eval.api.model.LM`` of one evaluation (``decoding="pcd"``: ``longred-pcd``,
    with ``pcd``'s parameters or the defaults)."""
    if backend == "vllm":
        from longred_bench.evaluation.vllm import vllm_lm

        return vllm_lm(
            model_spec,
            rope=rope,
            max_length=window,
            batch_size=batch_size,
            seed=seed,
            device=device,
        )
    if decoding == "pcd":
        from longred_bench.pcd.lm import PcdLM

        return PcdLM(
            pretrained=loaded.model,
            tokenizer=loaded.tokenizer,
            max_length=window,
            batch_size=batch_size,
            **(pcd or PcdConfig()).as_dict(),
        )
    from lm_eval.models.huggingface import HFLM

    return HFLM(
        pretrained=loaded.model,
        tokenizer=loaded.tokenizer,
        max_length=window,
        batch_size=batch_size,
        device=device,
    )
