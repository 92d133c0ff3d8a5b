"""Figure of the GPU relation-KL benchmark: time and peak memory against n, per implementation."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from longred_bench.reports.figures import save_figure, series_styles
from longred_bench.reports.kernel import GPU_IMPLS, read_csv
from longred_bench.reports.kernel_bound import MODES


def plot_gpu_benchmark(csv_path: Path, png_path: Path) -> None:
    """Time and peak memory against n (log-log), one line per impl, a column per (d, mode)."""
    df = read_csv(csv_path)
    ok = df[(df["status"] == "ok") & df["mode"].isin(list(MODES))]
    panels = sorted({(int(d), m) for d, m in zip(ok["head_dim"], ok["mode"], strict=True)})
    if not panels:
        return
    fig, axes = plt.subplots(2, len(panels), figsize=(4.2 * len(panels), 7), squeeze=False)
    for col, (d, mode) in enumerate(panels):
        sel = ok[(ok["head_dim"] == d) & (ok["mode"] == mode)]
        for impl in GPU_IMPLS:
            g = sel[sel["impl"] == impl].sort_values("n")
            if g.empty:
                continue
            style = {"label": impl, **series_styles(len(GPU_IMPLS))[GPU_IMPLS.index(impl)]}
            axes[0][col].plot(g["n"], g["time_ms"], **style)  # its style names its line
            axes[1][col].plot(g["n"], g["peak_mib"].clip(lower=1e-2), **style)
        axes[0][col].set_title(f"d={d}, {mode}")
        axes[0][col].set_ylabel("time, median (ms)")
        axes[1][col].set_ylabel("peak extra memory (MiB)")
        for ax in (axes[0][col], axes[1][col]):
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("sequence length n")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
    save_figure(fig, png_path, dpi=110)
