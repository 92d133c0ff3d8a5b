"""GPU benchmark of ``relation_kl``: triton vs chunked, eager and compiled PyTorch (CUDA only).

Implementations: ``triton`` and ``chunked`` (``relation_kl(impl=...)``), ``eager`` (the
materialised reference, ``impl="naive"``) and ``compiled`` (``torch.compile`` of that same
naive function, ``dynamic=False``, compiled afresh for every row; the compile is the untimed
first call). Modes: ``fwd`` (forward under ``torch.no_grad()``) and ``fwd_bwd`` (forward and
backward with respect to the student ``a_s``, ``b_s``; the teacher needs no gradient). Inputs:
``randn`` ``a`` ``[B, H, n, d]`` and ``b`` ``[B, KV, n, d]`` (GQA), ``reduction="mean"``.

Per row: an untimed first call (Triton JIT, torch.compile), then one call measured for peak
memory (``max_memory_allocated`` after ``reset_peak_memory_stats`` minus ``memory_allocated``
before the call) and as a time estimate, then warm-up calls and timed repetitions with CUDA
events, the L2 cache flushed before each; the time is the median. Out of memory gives status
``oom``; eager / compiled are skipped when their predicted score memory exceeds free memory.

Useful FLOPs per (batch x head): forward ``2 n^2 (d_t + d_s)``; forward+backward
``4 n^2 (d_t + d_s) + 4 n^2 d_s``; halved when causal. Exps per (batch x head): 2 per score in
forward, 6 in forward+backward; halved when causal. Bound time = max(FLOPs / peak tensor
rate, exps / SFU rate); bound fraction = bound time / measured time.

Writes ``relation_kl_gpu.csv`` (after every row), ``relation_kl_gpu.md`` and
``relation_kl_gpu.png`` under ``--out``. ``--append`` merges with an existing CSV (rows of the
same configuration are replaced), so a long grid can be run in parts; ``--report-only``
rebuilds the Markdown and the plot from the CSV without a GPU.

Example::

    python benchmarks/bench_relation_kl_gpu.py --quick --out /tmp/relkl
    python benchmarks/bench_relation_kl_gpu.py --dims 128 --lengths 1024 2048 4096 8192 --append
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import source12, write_csv

from longred_bench.reports.kernel_bound import (
    H100_SXM_DENSE_BF16_TFLOPS,
    H100_SXM_EXP_PER_S,
    MODES,
    row_metrics,
)
from longred_bench.reports.kernel_plot import plot_gpu_benchmark

IMPLS = ("triton", "chunked", "eager", "compiled")
DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
NAIVE_SCORE_COPIES = 6
"""fp32 ``[B, H, n, n]`` tensors assumed for the eager / compiled peak (5.2 to 6.2 on CPU)."""
CHECK_RTOL_FWD = 1e-3
CHECK_RTOL_GRAD = 1e-2
L2_FLUSH_BYTES = 256 << 20
DEVICE = "cuda"
"""Where inputs live; the unit tests point it at the CPU to dry-run the driver."""
MIB = 1 << 20
GIB = 1 << 30
KEY = ("impl", "mode", "n", "batch", "heads", "kv_heads", "kv_heads_teacher", "head_dim")
KEY += ("head_dim_teacher", "dtype", "causal")
"""Columns that identify a row; ``--append`` replaces old rows with the same values."""
FIELDS = [
    *KEY,
    "status",
    "time_ms",
    "time_min_ms",
    "reps",
    "first_call_ms",
    "peak_mib",
    "predicted_naive_gib",
    "useful_gflop",
    "tflops",
    "bound_ms",
    "bound_kind",
    "bound_fraction",
    "check_fwd_rel_err",
    "check_grad_rel_err",
    "peak_tflops",
    "exp_per_s",
    "device",
    "torch",
    "triton",
    "git_commit",
    "source",
    "timestamp",
]


# ------------------------------------------------------------------ formulas (pure, tested on CPU


def predicted_naive_bytes(bh: int, n: int, copies: int = NAIVE_SCORE_COPIES) -> int:
    """Predicted eager / compiled peak: ``copies`` fp32 score matrices plus the causal mask."""
    return copies * bh * n * n * 4 + n * n


# ------------------------------------------------------------------------------ output


def read_rows(path: Path) -> list[dict]:
    """Rows of an existing CSV (strings), or [] when it does not exist."""
    if not path.is_file():
        return []
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _key(row: dict) -> tuple[str, ...]:
    return tuple(str(row[k]) for k in KEY)


def merge_rows(old: list[dict], new: list[dict]) -> list[dict]:
    """``old`` rows whose key is not in ``new``, then ``new``."""
    keys = {_key(r) for r in new}
    return [r for r in old if _key(r) not in keys] + list(new)


def write_markdown(csv_path: Path, md_path: Path) -> str:
    """Write the Markdown report of the CSV at ``csv_path``; returns its text."""
    from longred_bench.reports.kernel import gpu_report_markdown, read_csv

    text = gpu_report_markdown(read_csv(csv_path), NAIVE_SCORE_COPIES)
    md_path.write_text(text)
    return text


def write_reports(out: Path) -> str:
    """Rebuild ``relation_kl_gpu.md`` and ``.png`` from ``relation_kl_gpu.csv`` under ``out``."""
    csv_path = out / "relation_kl_gpu.csv"
    text = write_markdown(csv_path, out / "relation_kl_gpu.md")
    plot_gpu_benchmark(csv_path, out / "relation_kl_gpu.png")
    return text


# ------------------------------------------------------------------------ measurement (CUDA)


def one_line(err: BaseException) -> str:
    """``Type: first line of the message``, at most 200 characters."""
    msg = (str(err).strip().splitlines() or [""])[0]
    return f"{type(err).__name__}: {msg}"[:200]


def is_oom(err: BaseException) -> bool:
    """True for CUDA out-of-memory errors, also when wrapped by torch.compile."""
    import torch

    return isinstance(err, torch.cuda.OutOfMemoryError) or "out of memory" in str(err).lower()


def time_call(fn: Callable[[], None], args: argparse.Namespace, stage: list[str]) -> dict:
    """First call, a peak-memory call, then CUDA-event timing; ``stage`` names the current step."""
    import torch

    stage[0] = "first call"
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    first_ms = (time.perf_counter() - t0) * 1e3
    stage[0] = "timing"
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    estimate = max(start.elapsed_time(end), 1e-3)
    warmup = min(int(args.warmup_ms / estimate), 100)
    reps = max(args.min_reps, min(int(args.rep_ms / estimate), args.max_reps))
    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device=DEVICE)
    for _ in range(warmup):
        fn()
    events = [
        (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        for _ in range(reps)
    ]
    for s, e in events:
        flush.zero_()
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    times = [s.elapsed_time(e) for s, e in events]
    return {
        "time_ms": statistics.median(times),
        "time_min_ms": min(times),
        "reps": reps,
        "first_call_ms": first_ms,
        "peak_mib": peak / MIB,
    }


def make_inputs(args: argparse.Namespace, n: int, d: int, d_t: int, seed: int = 0):
    """``(a_s, b_s, a_t, b_t)`` on :data:`DEVICE`; the student pair requires grad."""
    import torch

    dtype = getattr(torch, DTYPES[args.dtype])
    gen = torch.Generator(device=DEVICE).manual_seed(seed)

    def rnd(heads: int, dim: int) -> torch.Tensor:
        return torch.randn(args.batch, heads, n, dim, generator=gen, device=DEVICE, dtype=dtype)

    a_s = rnd(args.heads, d).requires_grad_(True)
    b_s = rnd(args.kv_heads, d).requires_grad_(True)
    return a_s, b_s, rnd(args.heads, d_t), rnd(args.kv_heads_teacher, d_t)


def make_loss_fn(impl: str, causal: bool) -> Callable:
    """``loss(a_s, b_s, a_t, b_t)`` of one implementation (compiled: a fresh compile)."""
    import torch
    import torch._dynamo

    from longred_bench.kernels import relation_kl, relation_kl_naive

    if impl == "compiled":
        torch._dynamo.reset()
        compiled = torch.compile(relation_kl_naive, dynamic=False)
        return lambda *x: compiled(*x, causal=causal, reduction="mean")
    name = {"triton": "triton", "chunked": "chunked", "eager": "naive"}[impl]
    return lambda *x: relation_kl(*x, causal=causal, reduction="mean", impl=name)


def measure_row(args, impl: str, mode: str, x, row: dict) -> dict:
    """Fill ``status`` and timing columns of ``row`` for one (impl, mode) on inputs ``x``."""
    import torch

    causal = not args.no_causal
    stage = ["setup"]
    try:
        loss_fn = make_loss_fn(impl, causal)
        a_s, b_s = x[0], x[1]
        if mode == "fwd":

            def fn() -> None:
                with torch.no_grad():
                    loss_fn(*x)

        else:

            def fn() -> None:
                loss_fn(*x).backward()
                a_s.grad = None  # freed after every call, so memory_allocated before a call
                b_s.grad = None  # (the peak baseline) never includes gradients

        row.update(time_call(fn, args, stage))
        row["status"] = "ok"
    except Exception as err:
        if is_oom(err):
            row["status"] = "oom"
        elif impl == "compiled" and stage[0] in ("setup", "first call"):
            row["status"] = f"compile failed: {one_line(err)}"
        else:
            row["status"] = f"failed ({stage[0]}): {one_line(err)}"
    x[0].grad = None
    x[1].grad = None
    gc.collect()
    torch.cuda.empty_cache()
    if row["status"] == "ok":
        row.update(
            row_metrics(
                n=row["n"],
                d_t=row["head_dim_teacher"],
                d_s=row["head_dim"],
                mode=mode,
                causal=causal,
                bh=args.batch * args.heads,
                time_ms=row["time_ms"],
                peak_tflops=args.peak_tflops,
                exp_per_s=args.exp_per_s,
            )
        )
    return row


def check_correctness(args, d: int, d_t: int, base: dict) -> dict:
    """Triton vs the naive path on fp32 copies of the same inputs: loss and student grads."""
    import torch

    from longred_bench.kernels import relation_kl

    causal = not args.no_causal
    x = make_inputs(args, args.check_n, d, d_t, seed=1)
    ref_x = [t.detach().float().requires_grad_(t.requires_grad) for t in x]
    row = {**base, "impl": "triton", "mode": "check", "n": args.check_n}
    try:
        kl = relation_kl(*x, causal=causal, impl="triton")
        kl.backward()
        ref = relation_kl(*ref_x, causal=causal, impl="naive")
        ref.backward()
        fwd_err = abs(kl.item() - ref.item()) / max(abs(ref.item()), 1e-30)
        grad_err = max(
            (g.grad.float() - r.grad).abs().max().item() / max(r.grad.abs().max().item(), 1e-30)
            for g, r in zip(x[:2], ref_x[:2], strict=True)
        )
        good = fwd_err <= CHECK_RTOL_FWD and grad_err <= CHECK_RTOL_GRAD
        row.update(check_fwd_rel_err=fwd_err, check_grad_rel_err=grad_err)
        row["status"] = "ok" if good else "mismatch"
    except Exception as err:
        row["status"] = "oom" if is_oom(err) else f"failed: {one_line(err)}"
    del x, ref_x
    gc.collect()
    torch.cuda.empty_cache()
    return row


# ------------------------------------------------------------------------------------ driver


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dims", type=int, nargs="+", default=[64, 128], help="head_dim d")
    p.add_argument("--lengths", type=int, nargs="+", default=[1024, 2048, 4096, 8192, 16384, 32768])
    p.add_argument("--impls", nargs="+", choices=IMPLS, default=list(IMPLS))
    p.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--heads", type=int, default=32, help="query heads")
    p.add_argument("--kv-heads", type=int, default=8, help="student kv heads (GQA)")
    p.add_argument("--kv-heads-teacher", type=int, default=None, help="default: --kv-heads")
    p.add_argument("--teacher-head-dim", type=int, default=None, help="default: d")
    p.add_argument("--no-causal", action="store_true")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    p.add_argument("--peak-tflops", type=float, default=H100_SXM_DENSE_BF16_TFLOPS)
    p.add_argument("--exp-per-s", type=float, default=H100_SXM_EXP_PER_S)
    p.add_argument("--warmup-ms", type=float, default=25.0)
    p.add_argument("--rep-ms", type=float, default=100.0)
    p.add_argument("--min-reps", type=int, default=3)
    p.add_argument("--max-reps", type=int, default=50)
    p.add_argument("--score-copies", type=int, default=NAIVE_SCORE_COPIES)
    p.add_argument("--check-n", type=int, default=1024)
    p.add_argument("--no-check", action="store_true", help="skip the correctness check")
    p.add_argument("--quick", action="store_true", help="smoke subset: d 64, n 1024 2048")
    p.add_argument("--append", action="store_true", help="merge into an existing CSV")
    p.add_argument("--report-only", action="store_true", help="rebuild MD/PNG from the CSV")
    p.add_argument("--out", type=Path, default=Path("reports/kernels"))
    args = p.parse_args(argv)
    if args.quick:
        args.dims, args.lengths = [64], [1024, 2048]
    args.kv_heads_teacher = args.kv_heads_teacher or args.kv_heads
    return args


def _progress(row: dict) -> None:
    extra = ""
    if row["status"] == "ok" and row["mode"] != "check":
        extra = (
            f" {row['time_ms']:.3f} ms {row['tflops']:.1f} TFLOP/s "
            f"({row['bound_fraction']:.2f} of {row['bound_kind']} bound) {row['peak_mib']:.1f} MiB"
        )
    elif row["mode"] == "check" and "check_fwd_rel_err" in row:
        extra = (
            f" fwd rel err {row['check_fwd_rel_err']:.2e}, grad err {row['check_grad_rel_err']:.2e}"
        )
    print(
        f"{row['impl']:>8} {row['mode']:>7} d={row['head_dim']:<4} n={row['n']:<6} "
        f"{row['status']}{extra}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    csv_path = args.out / "relation_kl_gpu.csv"
    if args.report_only:
        if not csv_path.is_file():
            print(f"bench_relation_kl_gpu: no {csv_path} to report on", file=sys.stderr)
            return 2
        print(write_reports(args.out))
        return 0
    import torch

    if not torch.cuda.is_available():
        print(
            "bench_relation_kl_gpu: needs a CUDA device (torch.cuda.is_available() is False)",
            file=sys.stderr,
        )
        return 2
    import torch._dynamo
    import triton

    from longred_bench.results import device_name, git_commit

    causal = not args.no_causal
    bh = args.batch * args.heads
    meta = {
        "batch": args.batch,
        "heads": args.heads,
        "kv_heads": args.kv_heads,
        "kv_heads_teacher": args.kv_heads_teacher,
        "dtype": DTYPES[args.dtype],
        "causal": causal,
        "peak_tflops": args.peak_tflops,
        "exp_per_s": args.exp_per_s,
        "device": device_name("cuda"),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "git_commit": git_commit(),
        "source": source12(),
    }
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, max(getattr(torch._dynamo.config, name), 64))
    old = read_rows(csv_path) if args.append else []
    rows: list[dict] = []
    failed_check = False

    def record(row: dict) -> None:
        row["timestamp"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        rows.append(row)
        write_csv(merge_rows(old, rows), csv_path, FIELDS)
        _progress(row)

    for d in args.dims:
        d_t = args.teacher_head_dim or d
        base = {**meta, "head_dim": d, "head_dim_teacher": d_t}
        if not args.no_check:
            check = check_correctness(args, d, d_t, base)
            failed_check |= check["status"] != "ok"
            record(check)
        oom_at: dict[tuple[str, str], int] = {}
        for n in args.lengths:
            x = make_inputs(args, n, d, d_t)
            for mode in args.modes:
                for impl in args.impls:
                    row = {**base, "impl": impl, "mode": mode, "n": n}
                    if impl in ("eager", "compiled"):
                        need = predicted_naive_bytes(bh, n, args.score_copies)
                        row["predicted_naive_gib"] = round(need / GIB, 3)
                        free = torch.cuda.mem_get_info()[0]
                        if (impl, mode) in oom_at:
                            row["status"] = f"skipped: oom at n={oom_at[impl, mode]}"
                        elif need > free:
                            row["status"] = (
                                f"skipped: would need {need / GIB:.3g} GiB "
                                f"({free / GIB:.3g} GiB free)"
                            )
                        if "status" in row:
                            record(row)
                            continue
                    measure_row(args, impl, mode, x, row)
                    if row["status"] == "oom":
                        oom_at.setdefault((impl, mode), n)
                    record(row)
            del x
            gc.collect()
            torch.cuda.empty_cache()

    print(write_reports(args.out))
    if failed_check:
        print("bench_relation_kl_gpu: correctness check failed (see above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
