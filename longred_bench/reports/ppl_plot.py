"""Long-document perplexity against token position, one line per (model, rope) run."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter

from longred_bench.reports.figures import save_figure, series_styles


def _label(key: tuple[Any, ...], varying: list[str]) -> str:
    model, rope, corpus, length = key
    parts = [str(model), str(rope) if rope else "its own RoPE"]  # a checkpoint's may be extended
    if "corpus" in varying:
        parts.append(str(corpus))
    if "length" in varying:
        parts.append(f"L={length}")
    return ", ".join(parts)


def plot_position_ppl(records: Iterable[Mapping[str, Any]], path: Path, title: str) -> Path:
    """PPL per position bucket from ``kind == "ppl"`` records (see
    :mod:`longred_bench.evaluation.ppl`): x = bucket midpoint (tokens), y = perplexity (log
    scale), one line per (model, rope); corpus and window length join the label when they
    vary. A dotted vertical line marks each distinct ``max_position_embeddings`` inside the plotted
    range. Written to
    ``path`` as PNG."""
    rows = [r for r in records if r.get("kind", "ppl") == "ppl"]
    if not rows:
        raise ValueError("no perplexity records to plot")
    runs: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for r in rows:
        key = (r["model"], r.get("rope"), r.get("corpus"), r.get("length"))
        runs.setdefault(key, []).append(r)
    varying = [name for i, name in ((2, "corpus"), (3, "length")) if len({k[i] for k in runs}) > 1]
    fig, ax = plt.subplots(figsize=(8, 4.5), constrained_layout=True)
    for (key, run), style in zip(runs.items(), series_styles(len(runs)), strict=True):
        run = sorted(run, key=lambda r: r["bucket_start"])
        x = [(r["bucket_start"] + r["bucket_end"]) / 2 for r in run]
        ax.plot(x, [r["ppl"] for r in run], ms=4, label=_label(key, varying), **style)
    reach = max(r["bucket_end"] for r in rows)
    windows = sorted({w for r in rows if (w := r.get("max_position_embeddings")) and w <= reach})
    for window in windows:
        ax.axvline(window, color="gray", ls=":", lw=1)
        ax.annotate(
            f"window {window}",
            (window, 1.0),
            xycoords=("data", "axes fraction"),
            rotation=90,
            va="top",
            ha="right",
            fontsize=7,
            color="gray",
        )
    ax.set(xlabel="token position (bucket midpoint)", ylabel="perplexity")
    ax.set_yscale("log")
    plain = FuncFormatter(lambda value, _: f"{value:g}")
    ax.yaxis.set_major_formatter(plain)
    low, high = ax.get_ylim()
    if high / low < 20:  # a narrow log range: label the intermediate ticks too
        ax.yaxis.set_minor_formatter(plain)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    ax.set_title(title, fontsize=10)
    return save_figure(fig, path)
