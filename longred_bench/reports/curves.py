"""``curves.png`` of a training run: the total loss and each term against tokens, and held-out
losses where measured, read from ``metrics.jsonl``."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

from longred_bench.reports.figures import save_figure, series_styles

matplotlib.use("Agg")
import matplotlib.pyplot as plt

_NOT_TERMS = {"step", "tokens", "lr", "seconds", "grad_norm"}


def read_metrics(path: Path) -> list[dict]:
    """The records of a ``metrics.jsonl``."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def plot_curves(metrics: Path, path: Path, *, title: str) -> Path:
    """Plot loss terms (left) and held-out losses (right) against tokens seen."""
    records = read_metrics(metrics)
    terms = sorted({k for r in records for k in r} - _NOT_TERMS)
    train = [k for k in terms if not k.startswith("heldout_")]
    heldout = [k for k in terms if k.startswith("heldout_")]
    fig, axes = plt.subplots(1, 2 if heldout else 1, figsize=(11 if heldout else 6, 4))
    axes = list(axes) if heldout else [axes]
    for key, style in zip(train, series_styles(len(train)), strict=True):
        pts = [(r["tokens"], r[key]) for r in records if key in r]
        axes[0].plot(*zip(*pts, strict=True), label=key, lw=1, color=style["color"])
    axes[0].set(xlabel="tokens", ylabel="training loss", title=title)
    axes[0].set_yscale("log")
    axes[0].legend(fontsize=8)
    for key, style in zip(heldout, series_styles(len(heldout)), strict=True):
        pts = [(r["tokens"], r[key]) for r in records if key in r]
        axes[1].plot(*zip(*pts, strict=True), ms=3, label=key.removeprefix("heldout_"), **style)
    if heldout:
        axes[1].set(xlabel="tokens", ylabel="held-out CE (nats/token)", title="held-out loss")
        axes[1].legend(fontsize=8)
    return save_figure(fig, path, dpi=110)
