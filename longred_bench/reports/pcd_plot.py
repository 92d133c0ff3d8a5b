"""The PCD report written out: its Markdown (:mod:`longred_bench.reports.pcd_report`) and its
figure, RULER mean and PSA salience against length, greedy beside PCD."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from longred_bench.reports.figures import save_figure
from longred_bench.reports.pcd_report import _name, pcd_markdown, ruler_by_length, ruler_frame
from longred_bench.reports.psa_report import sample_frame, summarize


def _base(extension: str) -> str:
    """The line an extension label belongs to (``"abf +pcd"`` -> ``"abf"``)."""
    return extension.removesuffix(" +pcd")


def plot_pcd(records: list[dict[str, Any]], path: Path, title: str, top_k: int) -> Path:
    """RULER mean (left) and PSA S first (right) against length, one line per line+decoding."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5), layout="constrained")
    by_line = ruler_by_length(ruler_frame(records))
    psa = [r for r in records if r.get("part") == "psa"]
    by_ext = summarize(sample_frame(psa), ["extension", "length"], top_k) if psa else None
    # one colour per line in both panels; PCD dashed in its line's colour
    names = {*by_line["line"]}
    if by_ext is not None:
        names |= {_base(e) for e in by_ext["extension"]}
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colour = {name: cycle[i % len(cycle)] for i, name in enumerate(sorted(names))}
    for (line, dec), rows in by_line.groupby(["line", "decoding"], sort=False):
        style = "--" if dec == "pcd" else "-"
        rows = rows.sort_values("length")
        left.plot(rows["length"], rows["value"], style, marker="o", color=colour[line],
                  label=_name(line, dec))  # fmt: skip
    if by_ext is not None:
        for ext, rows in by_ext.groupby("extension", sort=False):
            style = "--" if str(ext).endswith("+pcd") else "-"
            rows = rows.sort_values("length")
            right.plot(rows["length"], rows["s_first"], style, marker="o",
                       color=colour[_base(str(ext))], label=str(ext))  # fmt: skip
    for ax, name in ((left, "RULER mean (0-100)"), (right, "PSA salience S(L)")):
        ax.set_xscale("log", base=2)
        ax.set(xlabel="context length (tokens)", title=name)
        ax.grid(alpha=0.3)
    # One legend below both panels, so no line is hidden behind it.
    handles = dict(zip(*reversed(left.get_legend_handles_labels()), strict=True))
    handles.update(zip(*reversed(right.get_legend_handles_labels()), strict=True))
    fig.legend(handles.values(), handles.keys(), loc="outside lower center", ncol=4, fontsize=8,
               frameon=False)  # fmt: skip
    fig.suptitle(title)
    return save_figure(fig, path, dpi=110)


def build_pcd_report(
    records: list[dict[str, Any]], out: Path, *, profile: str, model: str, command: str,
    seconds: float, top_k: int, bench_dir: Path = Path("reports") / "bench",
    wall_note: str = "cached units count as 0",
) -> list[Path]:  # fmt: skip
    """Write ``out/pcd.md`` and ``out/pcd.png``; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    md = out / "pcd.md"
    md.write_text(
        pcd_markdown(records, profile=profile, model=model, command=command, seconds=seconds,
                     top_k=top_k, bench_dir=bench_dir, wall_note=wall_note),
        encoding="utf-8",
    )  # fmt: skip
    title = f"PCD on {model} (profile {profile})"
    return [md, plot_pcd(records, out / "pcd.png", title, top_k)]
