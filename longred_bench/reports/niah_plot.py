"""Needle-in-a-haystack heatmap: score (0-100) by context length (x) and needle depth (y)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from longred_bench.reports.figures import save_figure


def _length_label(length: int) -> str:
    return f"{length // 1024}K" if length % 1024 == 0 else str(length)


def _panel_title(key: tuple[Any, Any]) -> str:
    """A panel's model, with the RoPE extension applied to it where one was (none: the model
    as it is, which may be an extended checkpoint: it was titled "original")."""
    model, rope = key
    if model is None:
        return ""
    return f"{model}, {rope}" if rope else str(model)


def plot_niah_heatmap(records: Iterable[Mapping[str, Any]], path: Path, title: str) -> Path:
    """Heatmap of ``kind == "niah"`` records (``length``, ``depth``, ``score``; see
    :func:`longred_bench.taskdata.niah_grid.niah_cells`): columns are lengths, rows depths (0% at
    the top), colour the score on a fixed 0-100 scale, each cell annotated with its score; a cell
    without a record is left blank. Records that carry ``model``/``rope`` get one panel per
    (model, rope). Written to ``path`` as PNG."""
    rows = [r for r in records if r.get("kind", "niah") == "niah"]
    if not rows:
        raise ValueError("no NIAH records to plot")
    panels: dict[tuple[Any, Any], dict[tuple[int, float], float]] = {}
    for r in rows:
        cells = panels.setdefault((r.get("model"), r.get("rope")), {})
        cell = (int(r["length"]), float(r["depth"]))
        if cell in cells:
            raise ValueError(f"two NIAH records for length {cell[0]}, depth {cell[1]:g}")
        cells[cell] = float(r["score"])
    lengths = sorted({length for cells in panels.values() for length, _ in cells})
    depths = sorted({depth for cells in panels.values() for _, depth in cells})

    width = 1.2 + 0.75 * len(lengths)
    fig, axes = plt.subplots(
        1,
        len(panels),
        figsize=(width * len(panels) + 1.2, 0.8 + 0.42 * len(depths)),
        constrained_layout=True,
        squeeze=False,
    )
    cmap = matplotlib.colormaps["RdYlGn"].with_extremes(bad="#dddddd")
    image = None
    for ax, (key, cells) in zip(axes[0], panels.items(), strict=True):
        grid = np.full((len(depths), len(lengths)), np.nan)
        for (length, depth), score in cells.items():
            grid[depths.index(depth), lengths.index(length)] = score
        image = ax.imshow(grid, cmap=cmap, vmin=0.0, vmax=100.0, aspect="auto")
        for i, j in zip(*np.nonzero(~np.isnan(grid)), strict=True):
            dark = grid[i, j] < 15 or grid[i, j] > 85  # the ends of the colour map
            color = "white" if dark else "black"
            ax.text(j, i, f"{grid[i, j]:.0f}", ha="center", va="center", fontsize=8, color=color)
        ax.set_xticks(range(len(lengths)), [_length_label(x) for x in lengths])
        ax.set_yticks(range(len(depths)), [f"{d:g}" for d in depths])
        ax.set(xlabel="context length (tokens)", ylabel="needle depth (%)")
        ax.set_title(_panel_title(key), fontsize=9)
    fig.colorbar(image, ax=axes[0].tolist(), label="score", shrink=0.9)
    fig.suptitle(title, fontsize=10)
    return save_figure(fig, path)
