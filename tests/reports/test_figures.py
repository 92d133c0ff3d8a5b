"""``save_figure``: the one tail of every report and benchmark plot."""

from __future__ import annotations

import itertools
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


def test_save_figure_stopped_midway_leaves_the_file_as_it_was(tmp_path: Path, monkeypatch):
    """A plot cut short by an interrupt was left as a broken PNG, which a rerun read as written
    (a stopped drift's missing report is written only where the file is absent): the
    file appears whole or not at all, and an earlier one stays as it was."""
    import pytest

    path = tmp_path / "p.png"
    for before in (None, b"earlier"):
        if before is not None:
            path.write_bytes(before)
        fig, ax = plt.subplots(figsize=(2, 1.5))
        ax.plot([0, 1], [1, 0])

        def cut(target, **kw):
            Path(target).write_bytes(PNG_SIGNATURE)  # part of a PNG, then the interrupt
            raise KeyboardInterrupt

        monkeypatch.setattr(fig, "savefig", cut)
        with pytest.raises(KeyboardInterrupt):
            save_figure(fig, path)
        assert (path.read_bytes() if path.exists() else None) == before
        assert sorted(p.name for p in tmp_path.iterdir()) == ([] if before is None else ["p.png"])
        assert not plt.fignum_exists(fig.number)


def _drawn(monkeypatch, module) -> list:
    """Figures ``module`` hands to ``save_figure`` (kept open for inspection)."""
    figures = []
    monkeypatch.setattr(module, "save_figure", lambda fig, path, **kw: figures.append(fig) or path)
    return figures


def _styles(ax) -> list[tuple]:
    from matplotlib.colors import to_rgba

    return [(to_rgba(line.get_color()), line.get_marker()) for line in ax.lines]


def test_series_styles_tell_every_series_apart() -> None:
    from longred_bench.reports.figures import series_styles

    styles = [(tuple(s["color"]), s["marker"]) for s in series_styles(60)]
    assert len(set(styles)) == 60
    assert len({colour for colour, _ in styles[:20]}) == 20


def test_ruler_plot_gives_fourteen_series_fourteen_styles(tmp_path: Path, monkeypatch) -> None:
    from longred_bench.reports import ruler_plot

    figures = _drawn(monkeypatch, ruler_plot)
    series = {f"task{i}": {1024: float(i), 2048: float(2 * i)} for i in range(14)}
    ruler_plot.plot_ruler_lengths(series, tmp_path / "r.png", "t")
    styles = _styles(figures[0].axes[0])
    assert len(styles) == 14 and len(set(styles)) == 14
    assert len({colour for colour, _ in styles}) == 14


def test_drift_plot_draws_interval_bands_and_keeps_the_legend_off_the_lines(
    tmp_path: Path, monkeypatch
) -> None:
    import pandas as pd

    from longred_bench.reports import drift_plot

    figures = _drawn(monkeypatch, drift_plot)
    rows = [
        {"extension": ext, "layer": layer, "hidden_cosine": 0.9 + 0.01 * layer,
         "attention_kl": 0.1 * layer, "text_hidden_cosine": [0.89 + 0.01 * layer + d for d in
         (-0.01, 0.0, 0.01)], "text_attention_kl": [0.1 * layer * f for f in (0.8, 1.0, 1.2)]}
        for ext in ("abf", "pi")
        for layer in (1, 2, 3)
    ]  # fmt: skip
    drift_plot.plot_drift_layers(pd.DataFrame(rows), tmp_path / "d.png", "t")
    fig = figures[0]
    for ax in fig.axes:
        assert len(ax.collections) == 2  # one band per series
        assert ax.get_legend() is None  # the legend is the figure's, beside the panels
        assert len(set(_styles(ax))) == 2
    assert len(fig.legends) == 1
    without = pd.DataFrame(rows).drop(columns=["text_hidden_cosine", "text_attention_kl"])
    drift_plot.plot_drift_layers(without, tmp_path / "e.png", "t")
    assert all(len(ax.collections) == 0 for ax in figures[1].axes)  # no per-text values: no band


def test_a_niah_panel_without_an_applied_extension_is_named_by_its_model() -> None:
    """An extended checkpoint evaluated as it is was titled "ext_abf, original"."""
    from longred_bench.reports.niah_plot import _panel_title

    assert _panel_title(("ext_abf", None)) == "ext_abf"
    assert _panel_title(("base", "pi:factor=4")) == "base, pi:factor=4"


def test_a_series_drawn_over_an_equal_one_leaves_it_visible() -> None:
    """Two series of the same values (an extension that changes nothing) drew one line: the
    second, solid, hid the first; consecutive series now differ in line style."""
    from longred_bench.reports.figures import series_styles

    styles = [s["linestyle"] for s in series_styles(8)]
    assert all(a != b for a, b in itertools.pairwise(styles))
    assert styles[0] == "-"  # a lone series is drawn solid


def test_the_psa_plot_writes_ranks_as_numbers(tmp_path: Path, monkeypatch) -> None:
    """The mean-rank panel's log axis read 1.5 x 10^2; its ticks are plain numbers."""
    import pandas as pd

    from longred_bench.reports import psa_report

    figures = _drawn(monkeypatch, psa_report)
    rows = [{"extension": e, "length": n, "s_first": 0.1, "s_first_low": 0.0,
             "s_first_high": 0.2, "mean_rank": r, "mean_probability": 0.01}
            for e in ("a", "b") for n, r in ((512, 150.0), (1024, 185.0))]  # fmt: skip
    psa_report.plot_psa(pd.DataFrame(rows), tmp_path / "p.png", "t")
    ax = figures[0].axes[1]
    figures[0].canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels(minor=True) if t.get_text()]
    assert labels and all(label.replace(".", "").isdigit() for label in labels), labels
    assert [line.get_linestyle() for line in ax.lines] == ["-", "--"]


def test_fig2_labels_of_models_of_equal_retention_do_not_overlap(tmp_path: Path, monkeypatch):
    """Two extensions of equal retention a hair apart in similarity (`smol`'s ABF 1e8 and PI 2)
    printed one label over the other; each label now overlaps no other label and no marker,
    and stays inside its axes."""
    from longred_bench.metrics.stats import Interval
    from longred_bench.reports import fig2_report

    figures = _drawn(monkeypatch, fig2_report)
    values = [("abf:theta=1e8", 0.9486, 0.8935), ("pi:factor=2", 0.9579, 0.8935),
              ("abf:theta=1e6", 0.9921, 0.96), ("yarn:factor=8", 0.9872, 0.8935),
              ("abf:theta=1e9", 0.9245, 0.8667), ("pi:factor=8", 0.8816, 0.8266)]  # fmt: skip
    points = [fig2_report.Point("zero-shot", ext, Interval(sim, sim - 0.003, sim + 0.003),
                                50.0 * ret, ret) for ext, sim, ret in values]  # fmt: skip
    fig2_report.plot_fig2(points, tmp_path / "f.png", "t")
    [fig] = figures
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    labels = [t for t in ax.texts if t.get_text() != ""]
    assert sorted(t.get_text() for t in labels) == sorted(
        fig2_report._short_name(ext) for ext, _, _ in values
    )
    boxes = [t.get_window_extent(renderer) for t in labels]
    frame = ax.get_window_extent(renderer)
    markers = ax.transData.transform([(sim, ret) for _, sim, ret in values])
    for i, box in enumerate(boxes):
        assert not any(box.overlaps(other) for other in boxes[i + 1 :]), labels[i].get_text()
        assert frame.contains(box.x0, box.y0) and frame.contains(box.x1, box.y1)
        assert not any(box.contains(x, y) for x, y in markers)
    plt.close(fig)
