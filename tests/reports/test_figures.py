"""``save_figure``: the one tail of every report and benchmark plot."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.layout_engine import ConstrainedLayoutEngine

from longred_bench.reports.figures import save_figure

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_save_figure_writes_png_and_closes(tmp_path: Path) -> None:
    fig, ax = plt.subplots(figsize=(2, 1.5))
    ax.plot([0, 1], [1, 0])
    path = tmp_path / "made" / "by" / "save.png"  # missing folders are created
    assert save_figure(fig, path, dpi=50) == path
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > len(PNG_SIGNATURE)
    assert int.from_bytes(data[16:20], "big") == 100  # IHDR width: 2 in at 50 dpi
    assert not plt.fignum_exists(fig.number)


def test_save_figure_keeps_constrained_layout(tmp_path: Path) -> None:
    fig, ax = plt.subplots(figsize=(2, 1.5), constrained_layout=True)
    ax.plot([0, 1], [1, 0])
    save_figure(fig, tmp_path / "c.png")
    assert isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine)  # not tight-laid-out
    assert (tmp_path / "c.png").read_bytes().startswith(PNG_SIGNATURE)
