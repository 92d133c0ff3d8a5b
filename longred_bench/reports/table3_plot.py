"""Table 3's figure: Short Avg (with its interval) against RULER per run, and retention bars."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from longred_bench.reports.figures import save_figure
from longred_bench.reports.table3_rows import ROWS, RunKey


def plot_table3(summary: dict[RunKey, dict[str, Any]], path: Path, title: str) -> Path:
    """Left: Short Avg (interval bars) against RULER per run; right: Short Avg retention bars."""
    fig, (ax_xy, ax_bar) = plt.subplots(1, 2, figsize=(12, 4.8), constrained_layout=True)
    colours = {row: f"C{i}" for i, row in enumerate(ROWS)}
    shapes = "osD^vP*X"
    markers = {
        ext: shapes[i % len(shapes)] for i, ext in enumerate(dict.fromkeys(k[0] for k in summary))
    }
    for key, s in summary.items():
        short, ruler = s["short"], s["ruler"]
        if short.value is None or ruler.value is None:
            continue
        yerr = None
        if short.ci is not None:
            yerr = [[short.value - short.ci.low], [short.ci.high - short.value]]
        ax_xy.errorbar(
            ruler.value,
            short.value,
            yerr=yerr,
            fmt=markers.get(key[0], "o"),
            color=colours[key[1]],
            capsize=3,
            label=f"{key[1]} {key[0] or ''} s{key[2]}".strip(),
        )
    for key, s in summary.items():
        if key[1] == "original" and s["short"].value is not None:
            ax_xy.axhline(
                s["short"].value, color=colours["original"], ls="--", lw=1, label="original"
            )
    ax_xy.set(xlabel="RULER average (0-100)", ylabel="Short Avg (0-100)", title="short vs long")
    ax_xy.grid(alpha=0.3)
    if ax_xy.get_legend_handles_labels()[0]:
        ax_xy.legend(fontsize=7)
    bars = [(k, s["retention"]) for k, s in summary.items() if s["retention"] is not None]
    ax_bar.bar(range(len(bars)), [v for _, v in bars], color=[colours[k[1]] for k, _ in bars])
    ax_bar.set_xticks(
        range(len(bars)),
        [f"{k[1]}\n{k[0] or ''} s{k[2]}" for k, _ in bars],
        rotation=60,
        ha="right",
        fontsize=7,
    )
    ax_bar.axhline(1.0, color="k", lw=0.8)
    ax_bar.set(ylabel="Short Avg / original", title="short-text retention")
    ax_bar.grid(alpha=0.3, axis="y")
    fig.suptitle(title, fontsize=10)
    return save_figure(fig, path)
