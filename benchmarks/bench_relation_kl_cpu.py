"""CPU benchmark of ``relation_kl``: naive vs chunked time and peak memory against sequence length.

For each length ``n`` and implementation, a fresh Python subprocess builds fp32 causal inputs
(``B = 1``, student and teacher of the same shape), then measures

* peak memory: the peak resident set size (Linux ``VmHWM``, reset through
  ``/proc/self/clear_refs`` just before the call) minus the resident set size right before
  the call, i.e. the extra RAM the forward (and forward + backward) needed on top of the
  inputs, the imported libraries and a small warm-up call.  Where the peak cannot be reset,
  ``ru_maxrss`` (peak since process start) is used instead and the output says so;
* time: median wall time of ``--repeats`` forward passes (graph built, then dropped) and of
  ``--repeats`` forward + backward passes, after ``--warmup`` untimed ones.

The naive path is skipped when its predicted score memory exceeds ``--max-naive-gib``.
Writes ``relation_kl_cpu.csv``, ``relation_kl_cpu.md`` and ``relation_kl_cpu.png`` under
``--out`` and prints the Markdown table.

Example::

    python benchmarks/bench_relation_kl_cpu.py --lengths 512 1024 2048 4096 8192 16384 \\
        --heads 4 --head-dim 64 --out reports/kernels
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import command_line, loadavg, run_script, source12, write_csv

from longred_bench.reports.figures import save_figure
from longred_bench.results import device_name, git_commit

IMPLS = ("naive", "chunked")
NAIVE_SCORE_COPIES = 6
"""fp32 ``[B, H, n, n]`` tensors the naive path holds at its peak (5.2 to 6.2 measured)."""
MIB = 1 << 20
GIB = 1 << 30


def predicted_naive_bytes(batch: int, heads: int, n: int) -> int:
    """Predicted naive peak: ``NAIVE_SCORE_COPIES`` fp32 score matrices."""
    return NAIVE_SCORE_COPIES * batch * heads * n * n * 4


# ------------------------------------------------------------------------ worker (subprocess)


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(f"{field} not in /proc/self/status")


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _peak_kib(can_reset: bool) -> int:
    if can_reset:
        return _status_kib("VmHWM")
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def run_worker(spec: dict) -> dict:
    """Measure one ``(impl, n)`` in this process; returns a dict of results."""
    import gc

    import torch

    from longred_bench.kernels import relation_kl

    if spec["threads"] > 0:
        torch.set_num_threads(spec["threads"])
    heads, kv, d, n = spec["heads"], spec["kv_heads"], spec["head_dim"], spec["n"]
    impl = spec["impl"]

    def inputs(length: int):
        gen = torch.Generator().manual_seed(0)
        a_s = torch.randn(1, heads, length, d, generator=gen).requires_grad_(True)
        b_s = torch.randn(1, kv, length, d, generator=gen).requires_grad_(True)
        a_t = torch.randn(1, heads, length, d, generator=gen)
        b_t = torch.randn(1, kv, length, d, generator=gen)
        return a_s, b_s, a_t, b_t

    def step(x, backward: bool) -> None:
        loss = relation_kl(*x, causal=True, impl=impl)
        if backward:
            loss.backward()
            x[0].grad = None
            x[1].grad = None

    step(inputs(64), backward=True)  # load kernels and lazy state outside the measurement
    x = inputs(n)
    gc.collect()

    base_kib = _status_kib("VmRSS")
    can_reset = _reset_peak()
    loss = relation_kl(*x, causal=True, impl=impl)
    peak_fwd_kib = _peak_kib(can_reset) - base_kib
    loss.backward()
    peak_step_kib = _peak_kib(can_reset) - base_kib
    del loss
    x[0].grad = None
    x[1].grad = None

    timings = {}
    for name, backward in (("fwd", False), ("fwd_bwd", True)):
        for _ in range(spec["warmup"]):
            step(x, backward)
        samples = []
        for _ in range(spec["repeats"]):
            start = time.perf_counter()
            step(x, backward)
            samples.append(time.perf_counter() - start)
        timings[name] = statistics.median(samples) * 1e3
        timings[name + "_min"] = min(samples) * 1e3

    return {
        "fwd_ms": timings["fwd"],
        "fwd_bwd_ms": timings["fwd_bwd"],
        "fwd_min_ms": timings["fwd_min"],
        "fwd_bwd_min_ms": timings["fwd_bwd_min"],
        "peak_fwd_mib": peak_fwd_kib / 1024,
        "peak_fwd_bwd_mib": peak_step_kib / 1024,
        "memory_method": "VmHWM-reset" if can_reset else "ru_maxrss",
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
    }


# ------------------------------------------------------------------------------- driver


def measure(spec: dict, timeout: float) -> dict:
    """Run :func:`run_worker` for ``spec`` in a fresh subprocess."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": f"failed: timed out after {timeout:.0f} s"}
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no stderr"])[-1]
        return {"status": f"failed: rc={proc.returncode}: {tail[:200]}"}
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["status"] = "ok"
    return result


FIELDS = [
    "impl",
    "n",
    "batch",
    "heads",
    "kv_heads",
    "head_dim",
    "dtype",
    "causal",
    "status",
    "fwd_ms",
    "fwd_bwd_ms",
    "fwd_min_ms",
    "fwd_bwd_min_ms",
    "peak_fwd_mib",
    "peak_fwd_bwd_mib",
    "predicted_naive_gib",
    "memory_method",
    "threads",
    "device",
    "torch",
    "git_commit",
    "source",
    "timestamp",
]


def _fmt(value, digits: int = 1) -> str:
    return "" if value in (None, "") else f"{value:.{digits}f}"


def _pair(row: dict, name: str) -> str:
    if row.get(f"{name}_ms") in (None, ""):
        return ""
    return f"{_fmt(row[f'{name}_ms'])} / {_fmt(row[f'{name}_min_ms'])}"


def write_markdown(rows: list[dict], meta: dict, path: Path) -> str:
    """Write the Markdown report to ``path`` and return its text."""
    lines = [
        "# relation_kl on CPU: naive vs chunked",
        "",
        f"- device: {meta['device']}",
        f"- torch: {meta['torch']}, threads: {meta['threads']}",
        f"- git commit: `{meta['git_commit']}` (source `{meta['source']}`)",
        f"- timestamp: {meta['timestamp']}; load average (1/5/15 min) at start "
        f"{meta.get('loadavg', '?')}, at end {meta.get('loadavg_end', '?')}",
        f"- command: `{meta.get('command', '?')}`",
        f"- shapes: B=1, heads={meta['heads']}, kv_heads={meta['kv_heads']}, "
        f"head_dim={meta['head_dim']}, fp32, causal, reduction=mean",
        f"- time: median and minimum of {meta['repeats']} runs after {meta['warmup']} warm-up; "
        "fwd builds the autograd graph; on a shared CPU the minimum is the steadier figure",
        "- peak memory: extra resident memory (peak RSS during the call minus RSS just before "
        f"it, inputs already allocated), method {meta['memory_method']}, fresh process per row",
        f"- naive skipped above {meta['max_naive_gib']} GiB predicted "
        f"({NAIVE_SCORE_COPIES} fp32 score matrices)",
        "",
        "| n | impl | fwd ms (median / min) | fwd+bwd ms (median / min) | peak fwd MiB "
        "| peak fwd+bwd MiB | status |",
        "|---:|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['n']} | {r['impl']} | {_pair(r, 'fwd')} | {_pair(r, 'fwd_bwd')} "
            f"| {_fmt(r.get('peak_fwd_mib'))} | {_fmt(r.get('peak_fwd_bwd_mib'))} "
            f"| {r['status']} |"
        )
    text = "\n".join(lines) + "\n"
    path.write_text(text)
    return text


def write_plot(rows: list[dict], path: Path) -> None:
    """Time (minimum of runs) and peak memory against n, log-log, one line per implementation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(11, 4.2))
    for impl in IMPLS:
        ok = [r for r in rows if r["impl"] == impl and r["status"] == "ok"]
        if not ok:
            continue
        ns = [r["n"] for r in ok]
        fwd_bwd = [r["fwd_bwd_min_ms"] for r in ok]
        (line,) = ax_t.plot(ns, fwd_bwd, "o-", label=f"{impl} fwd+bwd")
        fwd = [r["fwd_min_ms"] for r in ok]
        ax_t.plot(ns, fwd, "s--", color=line.get_color(), label=f"{impl} fwd")
        mem = [max(r["peak_fwd_bwd_mib"], 1e-1) for r in ok]
        ax_m.plot(ns, mem, "o-", color=line.get_color(), label=impl)
    labels = ((ax_t, "time, minimum of runs (ms)"), (ax_m, "extra peak RSS, fwd+bwd (MiB)"))
    for ax, ylabel in labels:
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length n")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    ax_t.set_title("relation_kl time (fp32, causal, CPU)")
    ax_m.set_title("relation_kl peak memory")
    save_figure(fig, path)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lengths", type=int, nargs="+", default=[512, 1024, 2048, 4096, 8192])
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=None, help="default: --heads")
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--impls", nargs="+", choices=IMPLS, default=list(IMPLS))
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--threads", type=int, default=0, help="torch threads; 0 = torch default")
    p.add_argument("--max-naive-gib", type=float, default=8.0)
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per subprocess")
    p.add_argument("--out", type=Path, default=Path("reports/kernels"))
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.kv_heads = kv_heads = args.kv_heads or args.heads
    if args.repeats < 1 or args.warmup < 0 or min(args.lengths) < 1 or args.head_dim < 1:
        p.error("--repeats and every --lengths and --head-dim must be at least 1, --warmup >= 0")
    if args.heads < 1 or kv_heads < 1 or args.heads % kv_heads:
        p.error(f"--heads ({args.heads}) must be a positive multiple of --kv-heads ({kv_heads})")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        print(json.dumps(run_worker(json.loads(args.worker))))
        return 0

    kv_heads = args.kv_heads
    meta = {
        "device": device_name("cpu"),
        "git_commit": git_commit(),
        "source": source12(),
        "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "loadavg": loadavg(),
        "command": command_line(__file__, argv),
        "heads": args.heads,
        "kv_heads": kv_heads,
        "head_dim": args.head_dim,
        "repeats": args.repeats,
        "warmup": args.warmup,
        "max_naive_gib": args.max_naive_gib,
        "torch": "unknown",
        "threads": "unknown",
        "memory_method": "unknown",
    }
    rows = []
    for n in args.lengths:
        for impl in args.impls:
            predicted = predicted_naive_bytes(1, args.heads, n) / GIB
            row = {
                "impl": impl,
                "n": n,
                "batch": 1,
                "heads": args.heads,
                "kv_heads": kv_heads,
                "head_dim": args.head_dim,
                "dtype": "float32",
                "causal": True,
                "predicted_naive_gib": round(predicted, 3) if impl == "naive" else "",
            }
            if impl == "naive" and predicted > args.max_naive_gib:
                row["status"] = f"skipped: would need {predicted:.3g} GiB"
            else:
                spec = {
                    "impl": impl,
                    "n": n,
                    "heads": args.heads,
                    "kv_heads": kv_heads,
                    "head_dim": args.head_dim,
                    "repeats": args.repeats,
                    "warmup": args.warmup,
                    "threads": args.threads,
                }
                row.update(measure(spec, args.timeout))
                for key in ("torch", "threads", "memory_method"):
                    if key in row:
                        meta[key] = row[key]
            print(f"{impl:>8} n={n:<6} {row['status']}", file=sys.stderr, flush=True)
            rows.append(row)

    meta["loadavg_end"] = loadavg()
    if not any(r["status"] == "ok" for r in rows):  # nothing measured: the report is left as it is
        reasons = sorted({r["status"] for r in rows})
        print(f"error: no row was measured ({'; '.join(reasons)}); nothing written to "
              f"{args.out}", file=sys.stderr)  # fmt: skip
        return 1
    for row in rows:
        for key in ("device", "git_commit", "source", "timestamp", "torch"):
            row[key] = meta[key]
    write_csv(rows, args.out / "relation_kl_cpu.csv", FIELDS)
    text = write_markdown(rows, meta, args.out / "relation_kl_cpu.md")
    write_plot(rows, args.out / "relation_kl_cpu.png")
    print(text)
    return 0


if __name__ == "__main__":
    run_script(main)
