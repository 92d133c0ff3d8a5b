"""What every report and benchmark plot shares: distinguishable series styles
(:func:`series_styles`) and saving a finished figure (:func:`save_figure`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Twelve marker shapes against tab20's twenty colours: the (colour, marker) pair of series i is
# unique for the first 60 series, and no two of the first 20 share a colour.
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p")
LINESTYLES = ("-", "--", "-.", ":")

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def series_styles(n: int) -> list[dict[str, Any]]:
    """``n`` plot styles (``color``, ``marker`` and ``linestyle``, for ``ax.plot(...,
    **style)``) that tell series apart: tab20's dark colours first, then its light ones, each
    with its own marker; line styles cycle through :data:`LINESTYLES`, so a series drawn over
    an equal one leaves it visible in its gaps (an extension that changes nothing)."""
    import matplotlib.pyplot as plt  # already loaded by whoever draws

    palette = plt.get_cmap("tab20")
    return [
        {"color": palette((2 * i) % 20 + (2 * i) // 20 % 2), "marker": MARKERS[i % len(MARKERS)],
         "linestyle": LINESTYLES[i % len(LINESTYLES)]}
        for i in range(n)
    ]  # fmt: skip


def save_figure(fig: Figure, path: Path, *, dpi: int = 120) -> Path:
    """Lay out ``fig``, write it to ``path`` (parent folders made; the file appears whole or not
    at all, as a stopped command may leave it) and close it; returns ``path``.

    A figure made without a layout engine gets ``tight_layout``; one made with its own
    (``constrained_layout=True``) keeps it. The format follows the suffix (PNG for ``.png``).
    """
    import matplotlib.pyplot as plt  # already loaded by whoever drew ``fig``

    path = Path(path)
    if fig.get_layout_engine() is None:
        fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f".{path.stem}.{os.getpid()}.part{path.suffix}")  # the format's suffix
    try:  # whole or not at all: a plot cut by an interrupt read as written
        fig.savefig(part, dpi=dpi)
        os.replace(part, path)
    finally:
        plt.close(fig)
        part.unlink(missing_ok=True)
    return path


NEAR_PLACES = (((3, 3), "left", "baseline"), ((3, -3), "left", "top"),
               ((-3, 3), "right", "baseline"), ((-3, -3), "right", "top"))  # fmt: skip
"""Where :func:`label_points` tries a label first, in points from its marker: above right (every
label where none overlap), below right, above left, below left."""


def _far_places() -> tuple[tuple[tuple[float, float], str, str], ...]:
    """Farther out in eight directions, where a label is joined to its marker by a thin line."""
    directions = ((1, 1), (1, -1), (-1, 1), (-1, -1), (1, 0), (-1, 0), (0, 1), (0, -1))
    return tuple(((dx * r, dy * r), "left" if dx >= 0 else "right", "bottom" if dy >= 0 else "top")
                 for r in (14, 26, 38) for dx, dy in directions)  # fmt: skip


LABEL_PLACES = NEAR_PLACES + _far_places()


def _shared_area(a: Any, b: Any) -> float:
    """The area two boxes (matplotlib ``Bbox``) have in common."""
    from matplotlib.transforms import Bbox

    both = Bbox.intersection(a, b)
    return 0.0 if both is None else both.width * both.height


def label_points(ax: Any, points: list[tuple[float, float, str]], fontsize: int = 7) -> None:
    """Label each ``(x, y, text)`` of ``ax`` at the first place of :data:`LABEL_PLACES` where it
    overlaps no marker, no label placed before it and stays inside the axes (two models of equal
    retention printed one label over the other), else where it overlaps least. Call it after
    everything that sets the axes' limits and the figure's layout."""
    from matplotlib.transforms import Bbox

    fig = ax.figure
    fig.draw_without_rendering()  # the limits and layout the saved figure has
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    half = 4.0  # pixels: about a marker's half width at the reports' sizes
    placed = [Bbox.from_extents(px - half, py - half, px + half, py + half)
              for px, py in ax.transData.transform([(x, y) for x, y, _ in points])]  # fmt: skip
    line = {"arrowstyle": "-", "lw": 0.5, "color": "0.5"}
    for x, y, text in points:
        best = None  # (cost, label, box)
        for i, (offset, ha, va) in enumerate(LABEL_PLACES):
            label = ax.annotate(text, (x, y), xytext=offset, textcoords="offset points",
                                fontsize=fontsize, ha=ha, va=va,
                                arrowprops=line if i >= len(NEAR_PLACES) else None)  # fmt: skip
            box = label.get_window_extent(renderer)
            outside = box.width * box.height - _shared_area(box, frame)
            cost = outside + sum(_shared_area(box, b) for b in placed)
            if best is not None and cost >= best[0]:
                label.remove()
                continue
            if best is not None:
                best[1].remove()
            best = (cost, label, box)
            if cost == 0:
                break
        placed.append(best[2])
