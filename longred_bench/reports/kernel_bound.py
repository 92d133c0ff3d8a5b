"""Useful FLOPs, exponential counts and the max(MMA, exp) time bound of the relation KL.

Per (batch x head) slice with ``n`` tokens and teacher / student head dims ``d_t`` / ``d_s``:
forward ``2 n^2 (d_t + d_s)`` FLOPs and two exps per score (teacher and student); backward adds
the recomputed scores, ``dA = G B_s`` and ``dB = G^T A_s`` (``2 n^2 (d_t + d_s) + 4 n^2 d_s``)
and both exps again in each of its two kernels; everything is halved when causal.
"""

from __future__ import annotations

MODES = ("fwd", "fwd_bwd")
H100_SXM_DENSE_BF16_TFLOPS = 989.0
"""H100 SXM dense bf16 tensor-core peak (H200: the same)."""
H100_SXM_EXP_PER_S = 132 * 16 * 1.83e9
"""SFU exp rate: 132 SMs x 16 exp / clock / SM x 1.83 GHz boost, about 3.9e12 per second."""


def useful_flops(n: int, d_t: int, d_s: int, mode: str, causal: bool) -> int:
    """Useful FLOPs of one (batch x head) slice: both score products forward, and in backward
    the recomputed scores plus ``dA = G B_s`` and ``dB = G^T A_s``; halved when causal."""
    n2 = n * n
    forward = 2 * n2 * (d_t + d_s)
    if mode == "fwd":
        total = forward
    elif mode == "fwd_bwd":
        total = 2 * forward + 4 * n2 * d_s
    else:
        raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    return total // 2 if causal else total


def exp_count(n: int, mode: str, causal: bool) -> int:
    """Exponentials of one (batch x head) slice: teacher and student per score in forward, and
    both again in each of the two backward kernels; halved when causal."""
    per_score = {"fwd": 2, "fwd_bwd": 2 + 4}
    if mode not in per_score:
        raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    total = per_score[mode] * n * n
    return total // 2 if causal else total


def bound_seconds(
    flops: float, exps: float, peak_tflops: float, exp_per_s: float
) -> tuple[float, str]:
    """``(bound time in s, "mma" or "exp")``: the slower of the tensor-core and SFU times."""
    mma = flops / (peak_tflops * 1e12)
    exp = exps / exp_per_s
    return (mma, "mma") if mma >= exp else (exp, "exp")


def row_metrics(
    *,
    n: int,
    d_t: int,
    d_s: int,
    mode: str,
    causal: bool,
    bh: int,
    time_ms: float,
    peak_tflops: float,
    exp_per_s: float,
) -> dict:
    """Derived columns of one timed row: useful GFLOP per call, TFLOP/s and the bound."""
    flops = useful_flops(n, d_t, d_s, mode, causal) * bh
    exps = exp_count(n, mode, causal) * bh
    bound_s, kind = bound_seconds(flops, exps, peak_tflops, exp_per_s)
    seconds = time_ms * 1e-3
    return {
        "useful_gflop": flops / 1e9,
        "tflops": flops / seconds / 1e12,
        "bound_ms": bound_s * 1e3,
        "bound_kind": kind,
        "bound_fraction": bound_s / seconds,
    }
