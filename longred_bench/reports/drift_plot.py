"""Per-layer drift figure: hidden cosine and attention KL against layer, one line per model, each
with its own colour and marker, a band for its interval over the texts where the records carry
per-text values, and the legend beside the panels (never over a line)."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import MaxNLocator

from longred_bench.metrics.stats import bootstrap_mean_ci
from longred_bench.reports.figures import save_figure, series_styles
from longred_bench.reports.verdict_stats import BOOT_SEED, LEVEL, N_BOOT

PANELS = (("hidden_cosine", "text_hidden_cosine"), ("attention_kl", "text_attention_kl"))


def layer_band(rows: pd.DataFrame, column: str) -> tuple[list[float], list[float]] | None:
    """The per-layer interval (low, high) over texts of ``column`` (``text_hidden_cosine`` or
    ``text_attention_kl``: each row's per-text values), or ``None`` without them."""
    if column not in rows:
        return None
    lows, highs = [], []
    for values in rows[column]:
        if not isinstance(values, list | tuple):
            return None
        kept = [float(v) for v in values if v is not None and not math.isnan(float(v))]
        if len(kept) < 2:
            return None
        ci = bootstrap_mean_ci(kept, n_boot=N_BOOT, level=LEVEL, seed=BOOT_SEED)
        lows.append(ci.low)
        highs.append(ci.high)
    return lows, highs


def plot_drift_layers(layers: pd.DataFrame, path: Path, title: str) -> Path:
    """Two panels from tidy per-layer rows (columns ``extension``, ``layer``, ``hidden_cosine``,
    ``attention_kl``, and where measured the per-text ``text_hidden_cosine`` and
    ``text_attention_kl``), one line per extension; written to ``path`` as PNG."""
    fig, (ax_cos, ax_kl) = plt.subplots(1, 2, figsize=(12.5, 4.2), layout="constrained")
    groups = list(layers.groupby("extension", sort=False))
    banded = False
    for (name, rows), style in zip(groups, series_styles(len(groups)), strict=True):
        rows = rows.sort_values("layer")
        for ax, (column, texts) in zip((ax_cos, ax_kl), PANELS, strict=True):
            ax.plot(rows["layer"], rows[column], ms=4, lw=1.2, label=name, **style)
            band = layer_band(rows, texts)
            if band is not None:
                ax.fill_between(rows["layer"], *band, color=style["color"], alpha=0.18, lw=0)
                banded = True
    ax_cos.set(xlabel="layer", ylabel="hidden-state cosine to original", title="hidden similarity")
    ax_kl.set(xlabel="layer", ylabel="KL(original || extended), nats/row", title="attention KL")
    if (layers["attention_kl"] > 0).any():
        ax_kl.set_yscale("log")
    ax_cos.ticklabel_format(axis="y", useOffset=False)
    for ax in (ax_cos, ax_kl):
        ax.grid(alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    handles, labels = ax_kl.get_legend_handles_labels()
    note = f"bands: {LEVEL:.0%} bootstrap interval over texts" if banded else None
    fig.legend(handles, labels, loc="outside right upper", fontsize=8, title=note,
               title_fontsize=7)  # fmt: skip
    fig.suptitle(title, fontsize=10)
    return save_figure(fig, path)
