"""What each pair of a ``compare --pairs`` file costs on a GPU, for its ``--dry-run``: per model,
the GPU-hours of its evaluations (RULER, NIAH and the short suite, once per decoding) and its
peak memory at the longest length it is scored at, and the pair's drift; a model that one GPU
cannot hold there is flagged, with the longest length that fits. The same arithmetic as the
reproduce plans (:mod:`longred_bench.reproduce.costs`: model FLOPs, one GPU evaluating in
bf16), at the profiles' default hardware (:class:`~longred_bench.profiles.schema.Hardware`);
nothing is loaded. Every unit of ``compare`` runs on one device."""

from __future__ import annotations

from typing import Any

from longred_bench.evaluation.config import LONG_SUITES
from longred_bench.jobs.pairs import Pair, load_pairs, pair_config, pairs_plan
from longred_bench.profiles.schema import Hardware
from longred_bench.reproduce.costs import (
    EVAL_GENERATION,
    GIB,
    eval_flops,
    eval_memory,
    model_shape,
)
from longred_bench.reproduce.pool import hours_text


def _hours(h: float) -> str:
    return hours_text(h, 1, "GPU-hours")


def _model_flops(s: Any, cfg: Any) -> float | None:
    """Model FLOPs of one model's evaluations in ``compare`` config ``cfg`` (None: a suite not
    counted)."""
    configs = []
    if "ruler" in cfg.suites:
        configs.append({"suite": "ruler", "samples": cfg.ruler_samples, "lengths": cfg.lengths})
    if "niah" in cfg.suites:
        configs.append({"suite": "niah", "tasks": cfg.niah_depths, "samples": cfg.niah_samples,
                        "lengths": cfg.lengths})  # fmt: skip
    if "short" in cfg.suites:
        configs.append({"suite": cfg.short_suite, "tasks": list(cfg.short_tasks) or None,
                        "limit": cfg.short_limit})  # fmt: skip
    parts = [eval_flops(s, c, "eval") for c in configs]
    return None if None in parts else sum(parts) * len(cfg.decoding)


def fitting_length(s: Any, lengths: tuple[int, ...], batch: int, limit_gib: float) -> int | None:
    """The longest of ``lengths`` whose evaluation fits ``limit_gib`` on one GPU (None: none)."""
    fits = [n for n in lengths if eval_memory(s, n + EVAL_GENERATION, batch) / GIB <= limit_gib]
    return max(fits, default=None)


def pair_estimate(pair: Pair, cfg: Any, hw: Hardware) -> tuple[list[str], float, int]:
    """Lines for ``pair`` under ``cfg``, its GPU-hours and how many of its models one GPU of
    ``hw`` cannot hold at their longest length."""
    if cfg.device == "cpu":
        return ["  on the CPU (settings.device): no GPU estimate"], 0.0, 0
    rate = hw.gpu_tflops * 1e12 * hw.mfu * 3600
    lines, hours, over = [], 0.0, 0
    top = max(cfg.lengths) if set(LONG_SUITES) & set(cfg.suites) else None
    for model in (pair.original, *(m for m, _ in pair.extended)):
        s = model_shape(model)
        if s is None:
            lines.append(f"  {model}: not estimated (no known shape: a local folder with a "
                         "config.json is read)")  # fmt: skip
            continue
        flops = _model_flops(s, cfg)
        cost = "not estimated (a short task not counted)" if flops is None else (
            _hours(flops / rate))  # fmt: skip
        hours += flops / rate if flops is not None else 0.0
        line = f"  {model}: {cost}"
        if top is not None:
            peak = eval_memory(s, top + EVAL_GENERATION, cfg.batch_size) / GIB
            line += f"; {peak:.1f} GiB on one GPU at {top:,} tokens"
            if peak > hw.gpu_memory_gib:
                over += 1
                fit = fitting_length(s, cfg.lengths, cfg.batch_size, hw.gpu_memory_gib)
                line += (
                    f": OVER {hw.gpu_memory_gib:g} GiB, out of memory there by this estimate "
                    f"(the longest length that fits: {fit:,}; drop the longer ones from "
                    "settings.lengths, or run on a GPU with more memory)"
                    if fit
                    else f": OVER {hw.gpu_memory_gib:g} GiB at every length"
                )
        lines.append(line)
    s = model_shape(pair.original)
    if "drift" in cfg.suites and s is not None:
        drift = eval_flops(s, {"num_texts": cfg.drift_num_texts, "seq_len": cfg.drift_seq_len,
                               "extended": [m for m, _ in pair.extended]}, "drift")  # fmt: skip
        hours += drift / rate
        lines.append(f"  drift: {_hours(drift / rate)}")
    return lines, hours, over


def pairs_plan_with_costs(spec: str, hw: Hardware | None = None) -> str:
    """:func:`~longred_bench.jobs.pairs.pairs_plan` with each pair's estimate and the totals."""
    hw = hw or Hardware()
    settings, pairs, _ = load_pairs(spec)
    estimates = {}
    hours, over, cpu = 0.0, 0, False
    for pair in pairs:
        cfg = pair_config(settings, pair)
        lines, h, o = pair_estimate(pair, cfg, hw)
        estimates[pair.slug] = lines
        hours, over, cpu = hours + h, over + o, cfg.device == "cpu"  # the file's, every pair's
    text = pairs_plan(spec, estimates)
    if cpu:
        return text + "Estimated: no GPU estimate: the pairs run on the CPU (settings.device).\n"
    text += (f"Estimated: {_hours(hours)} in all, model FLOPs / "
             f"({hw.gpu_tflops:g} TFLOP/s x MFU {hw.mfu:g}), one GPU of {hw.gpu_memory_gib:g} GiB "
             f"evaluating in bf16 (weights, the KV cache at the longest length + "
             f"{EVAL_GENERATION} answer tokens, the larger of the prefill's MLP activations and "
             "the logits); a short task's generation counts its whole token cap. The MFU is "
             "assumed until measured on your GPUs (docs/reproduce.md).")  # fmt: skip
    if over:
        text += f" {over} model(s) over {hw.gpu_memory_gib:g} GiB: see OVER above."
    return text + "\n"
