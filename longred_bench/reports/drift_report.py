"""Markdown for a drift run: one summary row per extended model, then per-layer values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from longred_bench.reports import provenance
from longred_bench.wording import counted


def drift_frames(records: list[dict[str, Any]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary rows, per-layer rows) of drift records."""
    frame = pd.DataFrame([{k: v for k, v in r.items() if k != "provenance"} for r in records])
    summary = frame[frame["kind"] == "drift_summary"].reset_index(drop=True)
    layers = frame[frame["kind"] == "drift_layer"].reset_index(drop=True)
    # Each kind leaves the other's columns empty (NaN), which makes pandas store its integers as
    # floats (layer 1.0, M=6.0): they are integers again here.
    for part, column in ((summary, "top_m"), (layers, "layer")):
        if column in part and part[column].notna().all():
            part[column] = part[column].astype(int)
    return summary, layers


def cosine_digits(values: list[float], least: int = 4) -> int:
    """The decimals cosines ``values`` are printed with: ``least``, or as many more (up to 8) as
    it takes for one below 1 not to read 1.0000 and for values that differ to read differently
    (five extensions all read 1.0000)."""
    for digits in range(least, 9):
        text = [f"{v:.{digits}f}" for v in values]
        exact = all(t != f"{1:.{digits}f}" or v == 1.0 for t, v in zip(text, values, strict=True))
        if exact and len(set(text)) == len(set(values)):
            return digits
    return max(least, 8)


def cosines(values: list[float]) -> list[str]:
    """Cosines at :func:`cosine_digits` decimals."""
    digits = cosine_digits(values)
    return [f"{v:.{digits}f}" for v in values]


def drift_markdown(records: list[dict[str, Any]], title: str, command: str | None = None) -> str:
    """Markdown report of drift records (from :func:`longred_bench.jobs.drift.run_drift`);
    ``command``, the command line that measured them, under the title."""
    summary, layers = drift_frames(records)
    devices, code = provenance(records)
    first = summary.iloc[0]
    lines = [f"# {title}", ""] + ([f"Command: `{command}`", ""] if command else [])
    lines += [
        f"Original `{first['original']}`; texts `{first['texts']}`: "
        f"{counted(int(first['num_texts']), 'window')} of "
        f"{first['seq_len']} tokens. Device: {devices}. Commit {code}.",
        "",
        "| extended | hidden cosine (mean over layers) | hidden cosine (last) "
        "| attention KL (mean over layers, nats) | KL-selected layers (top-M + last) |",
        "|---|---|---|---|---|",
    ]
    wide = layers.pivot_table(
        index="layer", columns="extension", values=["hidden_cosine", "attention_kl"], sort=False
    )
    means = cosines(list(summary["mean_hidden_cosine"]))
    lasts = cosines(list(summary["last_hidden_cosine"]))
    for (_, row), mean, last in zip(summary.iterrows(), means, lasts, strict=True):
        asked = int(row["top_m"])  # a model of fewer layers has them all selected
        m = f"M={asked}" if asked <= len(wide.index) else f"M={len(wide.index)}, {asked} asked"
        lines.append(
            f"| {row['extension']} | {mean} | {last} | {row['mean_attention_kl']:.3e} | "
            f"{', '.join(str(x) for x in row['selected_layers'])} ({m}) |"
        )
    lines += [
        "",
        "## Per layer",
        "",
        "| layer | " + " | ".join(f"{m}: cos / KL" for m in summary["extension"]) + " |",
        "|---|" + "---|" * len(summary),
    ]
    for layer in wide.index:  # each layer's cosines as the summary's (none below 1 reads 1.0000)
        row = cosines([wide.loc[layer, ("hidden_cosine", m)] for m in summary["extension"]])
        cells = [
            f"{cos} / {wide.loc[layer, ('attention_kl', m)]:.2e}"
            for cos, m in zip(row, summary["extension"], strict=True)
        ]
        lines.append(f"| {layer} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Hidden cosine: mean over tokens of the cosine between the extended and original hidden "
        "state after each decoder layer (the last is the final normed output). Attention KL: "
        "KL(original || extended) of each query row's attention distribution, from post-RoPE "
        "q/k in linear memory, averaged over heads and query positions.",
    ]
    return "\n".join(lines) + "\n"


def write_missing_report(out: Path, original: str, command: str | None) -> list[Path]:
    """Write whichever of ``drift.md`` and ``drift.png`` is missing from ``out/drift.jsonl``, as
    ``drift`` writes them after its records (a drift stopped between the two: the same command
    measures nothing again, and wrote no report; a report still there, with its command line,
    is kept); returns the files written."""
    missing = [out / name for name in ("drift.md", "drift.png") if not (out / name).is_file()]
    if not missing:
        return []
    from longred_bench.cache import atomic_write_text
    from longred_bench.reports.drift_plot import plot_drift_layers
    from longred_bench.results import read_records

    records = read_records(out / "drift.jsonl")
    title = f"Drift of extended models from `{original}`"  # as jobs.drift.drift_command's
    if out / "drift.md" in missing:
        atomic_write_text(out / "drift.md", drift_markdown(records, title, command))
    if out / "drift.png" in missing:
        _, layers = drift_frames(records)
        plot_drift_layers(layers, out / "drift.png", title.replace("`", ""))
    return missing
