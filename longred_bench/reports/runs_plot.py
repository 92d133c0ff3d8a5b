"""The figure of every run-grid report (Tables 3, 4-7, LinearARD, LongRecipe): Short Avg (with its
interval) against RULER per run, and retention bars (each over the documents the run and the
original both scored)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from longred_bench.reports.figures import save_figure
from longred_bench.reports.runs import ROWS, RunKey


def plot_runs(summary: dict[RunKey, dict[str, Any]], path: Path, title: str) -> Path:
    """Left: Short Avg (interval bars) against RULER per run, the legend outside the axes;
    right: Short Avg retention bars grouped by extension, with intervals."""
    fig, (ax_xy, ax_bar) = plt.subplots(1, 2, figsize=(13, 5.0), constrained_layout=True)
    # tab20's dark colours for the first ten rows, its light ones after: no two rows share one.
    palette = plt.get_cmap("tab20")
    colours = {row: palette((2 * i) % 20 + (2 * i) // 20) for i, row in enumerate(ROWS)}
    shapes = "osD^vP*X"
    markers = {
        ext: shapes[i % len(shapes)] for i, ext in enumerate(dict.fromkeys(k[0] for k in summary))
    }
    labelled: set[tuple[Any, str]] = set()  # one legend entry per (extension, row), not per seed
    for key, s in summary.items():
        short, ruler = s["short"], s["ruler"]
        if short.value is None or ruler.value is None:
            continue
        seeds = sum(k[:2] == key[:2] for k in summary)
        label = f"{key[1]} {key[0] or ''}".strip() + (f" ({seeds} seeds)" if seeds > 1 else "")
        if key[:2] in labelled:
            label = "_nolegend_"
        labelled.add(key[:2])
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
            label=label,
        )
    for key, s in summary.items():
        if key[1] == "original" and s["short"].value is not None:
            ax_xy.axhline(
                s["short"].value, color=colours["original"], ls="--", lw=1, label="original"
            )
    ax_xy.set(xlabel="RULER average (0-100)", ylabel="Short Avg (0-100)", title="short vs long")
    ax_xy.grid(alpha=0.3)
    if ax_xy.get_legend_handles_labels()[0]:  # outside the axes: it must hide no point
        entries = len(ax_xy.get_legend_handles_labels()[0])
        ax_xy.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0,
                     ncol=1 if entries <= 16 else 2)  # fmt: skip
    _retention_bars(ax_bar, summary, colours)
    fig.suptitle(title, fontsize=10)
    return save_figure(fig, path)


def _retention_bars(ax: Any, summary: dict[RunKey, dict[str, Any]], colours: dict) -> None:
    """Retention bars grouped by extension (a gap and the extension's name between groups), each
    over the documents the run and the original both scored, with the run's Short Avg interval
    on them divided by the original's Short Avg on them (the original taken as fixed)."""
    groups: dict[Any, list[tuple[RunKey, dict[str, Any]]]] = {}
    for key, s in summary.items():
        if s["retention"].value is not None and not math.isnan(s["retention"].value):
            groups.setdefault(key[0], []).append((key, s))
    x, ticks, labels = 0.0, [], []
    for extension, members in groups.items():
        start = x
        for key, s in members:
            ratio = s["retention"]
            yerr = None
            if ratio.ci is not None:
                yerr = [
                    [max(0.0, ratio.value - ratio.ci[0])],
                    [max(0.0, ratio.ci[1] - ratio.value)],
                ]
            ax.bar(x, ratio.value, color=colours[key[1]], yerr=yerr, capsize=2, ecolor="0.3")
            ticks.append(x)
            labels.append(f"{key[1]} s{key[2]}")
            x += 1.0
        ax.text((start + x - 1.0) / 2, 1.02, str(extension), transform=ax.get_xaxis_transform(),
                ha="center", va="bottom", fontsize=7)  # fmt: skip
        x += 0.8  # the gap between extensions
    ax.set_xticks(ticks, labels, rotation=60, ha="right", fontsize=7)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_ylabel("Short Avg / original")
    ax.set_title("short-text retention, by extension", pad=18)
    ax.grid(alpha=0.3, axis="y")
