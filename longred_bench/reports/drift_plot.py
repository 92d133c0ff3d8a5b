"""Per-layer drift figure: hidden cosine and attention KL against layer, one line per model."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import MaxNLocator

from longred_bench.reports.figures import save_figure


def plot_drift_layers(layers: pd.DataFrame, path: Path, title: str) -> Path:
    """Two panels from tidy per-layer rows (columns ``extension``, ``layer``, ``hidden_cosine``,
    ``attention_kl``), one line per extension; written to ``path`` as PNG."""
    fig, (ax_cos, ax_kl) = plt.subplots(1, 2, figsize=(11, 4), constrained_layout=True)
    for name, rows in layers.groupby("extension", sort=False):
        rows = rows.sort_values("layer")
        ax_cos.plot(rows["layer"], rows["hidden_cosine"], marker="o", ms=3, label=name)
        ax_kl.plot(rows["layer"], rows["attention_kl"], marker="o", ms=3, label=name)
    ax_cos.set(xlabel="layer", ylabel="hidden-state cosine to original", title="hidden similarity")
    ax_kl.set(xlabel="layer", ylabel="KL(original || extended), nats/row", title="attention KL")
    if (layers["attention_kl"] > 0).any():
        ax_kl.set_yscale("log")
    ax_cos.ticklabel_format(axis="y", useOffset=False)
    for ax in (ax_cos, ax_kl):
        ax.grid(alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax_kl.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    return save_figure(fig, path)
