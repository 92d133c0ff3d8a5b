"""Saving a finished matplotlib figure: the one tail every report and benchmark plot shares."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def save_figure(fig: Figure, path: Path, *, dpi: int = 120) -> Path:
    """Lay out ``fig``, write it to ``path`` (parent folders made) and close it; returns ``path``.

    A figure made without a layout engine gets ``tight_layout``; one made with its own
    (``constrained_layout=True``) keeps it. The format follows the suffix (PNG for ``.png``).
    """
    import matplotlib.pyplot as plt  # already loaded by whoever drew ``fig``

    path = Path(path)
    if fig.get_layout_engine() is None:
        fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path
