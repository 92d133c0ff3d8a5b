"""Short-text retention of each extended model, per benchmark: grouped horizontal bars."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from longred_bench.reports.figures import save_figure, series_styles


def plot_retention_bars(
    retention: Mapping[str, Mapping[str, float]], path: Path, title: str
) -> Path:
    """Bars of ``retention[model][benchmark]`` (1.0 = nothing lost), one colour per model; PNG.

    Benchmarks without a ratio (an original score of 0) are left empty.
    """
    models = list(retention)
    benchmarks = sorted({b for ratios in retention.values() for b in ratios})
    height = 0.8 / max(len(models), 1)
    fig, ax = plt.subplots(figsize=(7.5, 1.0 + 0.45 * len(benchmarks) * max(len(models), 1) ** 0.5))
    for i, (model, style) in enumerate(zip(models, series_styles(len(models)), strict=True)):
        ys = [k + i * height for k in range(len(benchmarks))]
        xs = [retention[model].get(b, math.nan) for b in benchmarks]
        widths = [0.0 if math.isnan(x) else x for x in xs]
        ax.barh(ys, widths, height=height, label=model, color=style["color"])
    ax.axvline(1.0, color="black", lw=0.8, ls="--")
    ax.set_yticks([k + 0.4 - height / 2 for k in range(len(benchmarks))], benchmarks, fontsize=8)
    ax.invert_yaxis()
    ax.set(xlabel="retention (extended / original)", title=title)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return save_figure(fig, path)
