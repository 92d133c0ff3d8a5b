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
