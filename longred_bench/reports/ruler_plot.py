"""RULER score against context length, one line per model (or per task), each told apart by
colour and marker."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from longred_bench.reports.figures import save_figure, series_styles


def plot_ruler_lengths(series: Mapping[str, Mapping[int, float]], path: Path, title: str) -> Path:
    """Lines of score (0-100) against length (log2 axis), one per ``series`` label, each with its
    own colour and marker, the legend beside the axes; PNG."""
    fig, ax = plt.subplots(figsize=(8.5, 4), constrained_layout=True)
    lengths: set[int] = set()
    for (label, by_length), style in zip(series.items(), series_styles(len(series)), strict=True):
        xs = sorted(by_length)
        lengths.update(xs)
        ax.plot(xs, [by_length[x] for x in xs], ms=5, label=label, **style)
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(lengths), [str(x) for x in sorted(lengths)])
    ax.set(xlabel="context length (tokens)", ylabel="score (0-100)", title=title, ylim=(-3, 103))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return save_figure(fig, path)
