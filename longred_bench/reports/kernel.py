"""Kernel report: relation-KL memory, speed and exactness beside LinearARD's published claim.

Reads the CSVs of ``benchmarks/bench_relation_kl_cpu.py`` and, when present, ``..._gpu.py`` and
the compile check's (``longred_bench.kernels.triton_compile``), and writes ``kernel.md`` and
``kernel.png``; every measured number comes from those CSVs, the only others are LinearARD's
published figures. The GPU benchmark reuses the table and target helpers.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from .figures import save_figure, series_styles
from .kernel_compile import commits, compile_section, read_compile_csv

TARGET_FWD_TFLOPS = 400.0
TARGET_FWD_HEAD_DIM = 128
TARGET_FWD_N = 8192
TARGET_SPEEDUP = 5.0
TARGET_SPEEDUP_N = 4096
LINEAR_SLOPE_MAX = 1.1
"""Memory counts as linear in n when the log-log slope of peak memory against n is at most this."""
EXACTNESS_TESTS = ("tests/kernels/test_relation_kl.py", "tests/kernels/test_relation_kl_triton.py")
PENDING_GPU = "GPU figures: pending (no GPU run committed yet)"
MODE_LABEL = {"fwd": "forward", "fwd_bwd": "forward+backward"}
GPU_IMPLS = ("triton", "chunked", "eager", "compiled")
LINEARARD_CLAIM = (
    "LinearARD (arXiv 2604.00004) trains a student with linear / position-interpolation RoPE "
    "on the relation KL of the Q/Q, K/K and V/V self-relations, computed with "
    '"exact KL and gradients at linear memory". It reports using 4.25M training tokens '
    "against 256M for LongReD / continued pre-training, and recovering 98.3% of the short-text "
    "performance of state-of-the-art baselines."
)


def read_csv(path: Path) -> pd.DataFrame:
    """A benchmark CSV with the provenance columns kept as text (a commit may look numeric)."""
    text = ("status", "device", "torch", "triton", "git_commit", "source", "timestamp")
    return pd.read_csv(path, dtype={c: str for c in text})


def loglog_slope(ns: Iterable[float], values: Iterable[float]) -> float | None:
    """Least-squares slope of ``log(value)`` against ``log(n)``; None with < 2 distinct n."""
    pairs = [(float(n), float(v)) for n, v in zip(ns, values, strict=True) if n > 0 and v > 0]
    if len({n for n, _ in pairs}) < 2:
        return None
    x, y = np.log([p[0] for p in pairs]), np.log([p[1] for p in pairs])
    return float(np.polyfit(x, y, 1)[0])


def _first(df: pd.DataFrame, **equal: object) -> pd.Series | None:
    sel = df[np.logical_and.reduce([df[key] == value for key, value in equal.items()])]
    return None if sel.empty else sel.iloc[0]


def _num(value: object, digits: int = 1) -> str:
    return "" if value is None or pd.isna(value) else f"{float(value):.{digits}f}"


def _cell(row: pd.Series | None, col: str, digits: int = 1) -> str:
    """The value of ``col`` for an ``ok`` row, the status before any colon otherwise."""
    if row is None:
        return ""
    return _num(row[col], digits) if row["status"] == "ok" else str(row["status"]).split(":")[0]


def _configs(df: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """Split GPU rows by shape configuration; the label is empty when there is only one."""
    groups = list(df.groupby(["dtype", "causal", "batch", "heads", "kv_heads"], sort=True))
    if len(groups) == 1:
        return [("", df)]
    return [(f"[{dt}, causal={c}, B={b}, H={h}, KV={kv}] ", g) for (dt, c, b, h, kv), g in groups]


def gpu_target_checks(df: pd.DataFrame) -> list[str]:
    """Markdown bullet lines checking the three kernel targets against GPU benchmark rows."""
    lines: list[str] = []
    bench = df[df["mode"].isin(list(MODE_LABEL))]
    for label, rows in _configs(bench):
        ok = rows[rows["status"] == "ok"]
        name = (
            f"{label}forward >= {TARGET_FWD_TFLOPS:g} useful TFLOP/s at "
            f"d={TARGET_FWD_HEAD_DIM}, n={TARGET_FWD_N} (triton)"
        )
        row = _first(ok, impl="triton", mode="fwd", head_dim=TARGET_FWD_HEAD_DIM, n=TARGET_FWD_N)
        if row is None:
            lines.append(f"- {name}: not measured")
        else:
            verdict = "met" if row["tflops"] >= TARGET_FWD_TFLOPS else "not met"
            lines.append(
                f"- {name}: {row['tflops']:.1f} TFLOP/s, {row['bound_fraction']:.2f} of the "
                f"{row['bound_kind']} bound: {verdict}"
            )
        for d in sorted(rows["head_dim"].unique()):
            name = (
                f"{label}forward+backward >= {TARGET_SPEEDUP:g}x faster than eager at "
                f"d={d}, n={TARGET_SPEEDUP_N}"
            )
            tri = _first(ok, impl="triton", mode="fwd_bwd", head_dim=d, n=TARGET_SPEEDUP_N)
            eager = _first(rows, impl="eager", mode="fwd_bwd", head_dim=d, n=TARGET_SPEEDUP_N)
            if tri is None or eager is None:
                lines.append(f"- {name}: not measured")
            elif eager["status"] != "ok":
                lines.append(f"- {name}: eager did not run ({eager['status']})")
            else:
                speedup = eager["time_ms"] / tri["time_ms"]
                verdict = "met" if speedup >= TARGET_SPEEDUP else "not met"
                lines.append(
                    f"- {name}: {speedup:.1f}x (triton {tri['time_ms']:.2f} ms, eager "
                    f"{eager['time_ms']:.2f} ms): {verdict}"
                )
        tri_rows = ok[ok["impl"] == "triton"]
        for (d, mode), g in tri_rows.groupby(["head_dim", "mode"], sort=True):
            g = g.sort_values("n")
            slope = loglog_slope(g["n"], g["peak_mib"])
            per_n = ", ".join(
                f"{int(n)}: {p * 1024 / n:.2f}" for n, p in zip(g["n"], g["peak_mib"], strict=True)
            )
            if slope is None:
                verdict = "needs two lengths"
            else:
                met = "met" if slope <= LINEAR_SLOPE_MAX else "not met"
                verdict = f"log-log slope {slope:.2f} (linear if <= {LINEAR_SLOPE_MAX:g}): {met}"
            lines.append(
                f"- {label}triton peak memory linear in n, d={d}, {MODE_LABEL[mode]}: "
                f"peak KiB per token {per_n}; {verdict}"
            )
    return lines


def gpu_correctness_lines(df: pd.DataFrame) -> list[str]:
    """Bullet lines of the triton-vs-fp32-naive checks (rows with ``mode == "check"``)."""
    return [
        f"- d={r['head_dim']}, n={r['n']}, {r['dtype']}: triton vs fp32 naive, forward relative "
        f"error {r['check_fwd_rel_err']:.2e}, gradient error / max |grad| "
        f"{r['check_grad_rel_err']:.2e}: {r['status']}"
        for _, r in df[df["mode"] == "check"].sort_values(["head_dim", "n"]).iterrows()
    ]


def gpu_tables(df: pd.DataFrame) -> list[str]:
    """One Markdown table per (config, head_dim, mode): time per impl, triton speed, memory."""
    lines: list[str] = []
    bench = df[df["mode"].isin(list(MODE_LABEL))]
    for label, rows in _configs(bench):
        impls = [i for i in GPU_IMPLS if i in set(rows["impl"])]
        for (d, mode), g in rows.groupby(["head_dim", "mode"], sort=True):
            head = [f"{i} ms" for i in impls] + ["triton TFLOP/s", "triton bound fraction"]
            head += [f"{i} peak MiB" for i in impls]
            lines += [f"### {label}d={d}, {MODE_LABEL[mode]}", "", f"| n | {' | '.join(head)} |"]
            lines += ["|---:|" + "---:|" * len(head)]
            for n in sorted(g["n"].unique()):
                cells = {i: _first(g, impl=i, n=n) for i in impls}
                tri = cells.get("triton")
                lines.append(
                    f"| {n} | "
                    + " | ".join(_cell(cells[i], "time_ms", 3) for i in impls)
                    + f" | {_cell(tri, 'tflops')} | {_cell(tri, 'bound_fraction', 2)} | "
                    + " | ".join(_cell(cells[i], "peak_mib") for i in impls)
                    + " |"
                )
            lines.append("")
    return lines


def _cpu_section(cpu: pd.DataFrame) -> list[str]:
    first = cpu.iloc[0]
    lines = [
        "## CPU: naive vs chunked (`reports/kernels/relation_kl_cpu.csv`)",
        "",
        f"- Device: {first['device']}; torch {first['torch']}, {first['threads']:.0f} threads.",
        f"- Commit {commits(cpu)}, measured {first['timestamp']}.",
        f"- B={first['batch']}, heads={first['heads']}, kv_heads={first['kv_heads']}, "
        f"head_dim={first['head_dim']}, {first['dtype']}, causal={first['causal']}; time is the "
        "minimum of runs, peak is the extra resident memory of forward+backward.",
        "",
        "| n | naive fwd+bwd ms | chunked fwd+bwd ms | naive peak MiB | chunked peak MiB "
        "| naive / chunked peak |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for n in sorted(cpu["n"].unique()):
        naive, chunked = _first(cpu, impl="naive", n=n), _first(cpu, impl="chunked", n=n)
        pk = [r["peak_fwd_bwd_mib"] for r in (naive, chunked) if r is not None]
        ratio = f"{pk[0] / pk[1]:.1f}x" if len(pk) == 2 and pd.notna(pk[0] / pk[1]) else ""
        lines.append(
            f"| {n} | {_cell(naive, 'fwd_bwd_min_ms')} | {_cell(chunked, 'fwd_bwd_min_ms')} "
            f"| {_cell(naive, 'peak_fwd_bwd_mib')} | {_cell(chunked, 'peak_fwd_bwd_mib')} "
            f"| {ratio} |"
        )
    failed = cpu[(cpu["impl"] == "naive") & (cpu["status"] != "ok")]
    cannot = "; ".join(f"n={r['n']} ({r['status']})" for _, r in failed.iterrows())
    lines += ["", f"Naive cannot run here at: {cannot or 'none of the measured lengths'}.", ""]
    return lines


def _slopes(df: pd.DataFrame, col: str) -> str:
    """``impl slope (n a to b)``: log-log slope of ``col`` against n per impl, ``ok`` rows."""
    ok = df[df["status"] == "ok"].sort_values("n")
    return ", ".join(
        f"{name} {_num(loglog_slope(g['n'], g[col]), 2)} (n {g['n'].min()} to {g['n'].max()})"
        for name, g in ok.groupby("impl")
    )


def _claims_section(cpu: pd.DataFrame, gpu: pd.DataFrame | None) -> list[str]:
    mem = (
        "CPU peak forward+backward memory against n, log-log slope (2 = quadratic, "
        f"1 = linear): {_slopes(cpu, 'peak_fwd_bwd_mib')}."
    )
    if gpu is None:
        mem += " GPU: pending."
    else:
        tri = gpu[(gpu["impl"] == "triton") & (gpu["mode"] == "fwd_bwd")]
        parts = [f"d={d}: {_slopes(g, 'peak_mib')}" for d, g in tri.groupby("head_dim")]
        mem += " GPU forward+backward slope: " + ("; ".join(parts) or "no rows") + "."
    tests = " and ".join(f"`{t}`" for t in EXACTNESS_TESTS)
    exact = f"Chunked and triton KL and student gradients against the reference: {tests}."
    if gpu is not None and (gpu["mode"] == "check").any():
        exact += " GPU spot checks: see the correctness lines below."
    return [
        "## Published claim and our counterpart",
        "",
        f"Claim (published, not measured here): {LINEARARD_CLAIM}",
        "",
        "| claim | measured here |",
        "|---|---|",
        f"| exact KL and gradients | {exact} |",
        f"| linear memory | {mem} |",
        "| 4.25M training tokens, 98.3% of short-text performance | not measured by the kernel "
        "report (needs the suite's distillation training) |",
        "",
    ]


def _plot(cpu: pd.DataFrame, gpu: pd.DataFrame | None, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(cpu, "peak_fwd_bwd_mib", "CPU peak memory, fwd+bwd")]
    if gpu is not None:
        g_ok = gpu[(gpu["status"] == "ok") & (gpu["mode"] == "fwd_bwd")]
        d_max = g_ok["head_dim"].max() if not g_ok.empty else None
        panels.append((g_ok[g_ok["head_dim"] == d_max], "peak_mib", f"GPU fwd+bwd, d={d_max}"))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    for ax, (df, col, title) in zip(axes[0], panels, strict=True):
        groups = list(df[df["status"] == "ok"].sort_values("n").groupby("impl"))
        for (impl, g), style in zip(groups, series_styles(len(groups)), strict=True):
            ax.plot(g["n"], g[col], label=impl, **style)  # each style names its line
        ax.set(xscale="log", yscale="log", title=title, xlabel="n", ylabel="peak extra MiB")
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend()
    save_figure(fig, path)


def build_kernel_report(
    cpu_csv: Path, gpu_csv: Path | None, out_dir: Path, compile_csv: Path | None = None
) -> list[Path]:
    """Write ``kernel.md`` and ``kernel.png`` under ``out_dir``; returns their paths.

    ``gpu_csv`` may be None or a missing file: the GPU section then says it is pending.
    ``compile_csv`` (the kernels compiled for a GPU target) adds its section when present.
    """
    cpu = read_csv(cpu_csv)
    gpu = read_csv(gpu_csv) if gpu_csv is not None and Path(gpu_csv).is_file() else None
    compiled = []
    if compile_csv is not None and Path(compile_csv).is_file():
        compiled = compile_section(read_compile_csv(compile_csv), str(compile_csv))
    out_dir.mkdir(parents=True, exist_ok=True)
    lines = [
        "# Relation-KL kernel: memory, speed and exactness",
        "",
        *_claims_section(cpu, gpu),
        *_cpu_section(cpu),
        *compiled,
        "## GPU: triton vs chunked, eager and compiled PyTorch",
        "",
    ]
    if gpu is None:
        lines += [PENDING_GPU, ""]
    else:
        first = gpu.iloc[0]
        lines += [
            f"- Device: {first['device']}; torch {first['torch']}, triton {first['triton']}.",
            f"- Commit {commits(gpu)}, measured {first['timestamp']}.",
            f"- Bound: max(useful FLOPs / {first['peak_tflops']:g} TFLOP/s, exps / "
            f"{first['exp_per_s']:.3g} per s); fraction = bound time / measured time.",
            "",
            *gpu_tables(gpu),
            "### Targets",
            "",
            *gpu_target_checks(gpu),
            "",
            "### Correctness",
            "",
            *(gpu_correctness_lines(gpu) or ["- no correctness rows in the CSV"]),
            "",
        ]
    md = out_dir / "kernel.md"
    md.write_text("\n".join(lines))
    png = out_dir / "kernel.png"
    _plot(cpu, gpu, png)
    return [md, png]


def gpu_report_markdown(df: pd.DataFrame, naive_copies: int) -> str:
    """The Markdown report of the GPU benchmark's rows ``df`` (its CSV read by
    :func:`read_csv`): provenance and method, tables, targets, correctness and the rows that did
    not run. ``naive_copies`` is the number of fp32 score matrices the benchmark assumed when it
    skipped eager / compiled rows."""
    first = df.iloc[0]
    lines = [
        "# relation_kl on GPU: triton vs chunked, eager and compiled",
        "",
        f"- device: {first['device']}",
        f"- torch: {first['torch']}, triton: {first['triton']}",
        f"- git commit: {commits(df)}",
        f"- timestamp: {first['timestamp']} (of the first row; each row has its own)",
        f"- bound: max(useful FLOPs / {first['peak_tflops']:g} TFLOP/s dense tensor peak, "
        f"exps / {first['exp_per_s']:.4g} per s SFU rate); fraction = bound / measured time",
        "- useful FLOPs per (batch x head): fwd 2 n^2 (d_t + d_s); fwd+bwd 4 n^2 (d_t + d_s) "
        "+ 4 n^2 d_s; exps: 2 n^2 fwd, 6 n^2 fwd+bwd; both halved when causal",
        "- time: median of CUDA-event timed repetitions after an untimed first call and warm-up, "
        "L2 flushed before each; fwd runs under torch.no_grad()",
        "- peak: max_memory_allocated during one call minus memory_allocated before it "
        "(inputs excluded)",
        f"- eager / compiled skipped when {naive_copies} fp32 score matrices exceed free memory",
        "",
        "## Tables",
        "",
        *gpu_tables(df),
        "## Targets (printed, not asserted)",
        "",
        *gpu_target_checks(df),
        "",
        "## Correctness (triton vs fp32 naive)",
        "",
        *(gpu_correctness_lines(df) or ["- not run"]),
        "",
        "## Rows that did not run",
        "",
        *[
            f"- {r['impl']} {r['mode']} d={r['head_dim']} n={r['n']}: {r['status']}"
            for _, r in df[df["status"] != "ok"].iterrows()
        ],
        "",
    ]
    return "\n".join(lines)
