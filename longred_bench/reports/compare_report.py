"""The ``compare`` report: short-text retention, RULER, NIAH and drift of extended models.

Built only from the records :func:`longred_bench.jobs.compare.run_compare` saved. Scores are on a
0-100 scale (accuracies and exact match times 100, RULER and NIAH as they are). Per model:

- the short-text score of each benchmark (its headline metric: ``acc``, else ``exact_match``),
  the category means and ``Short Avg``, their mean, as LongReD reports them and every table
  report computes them (:mod:`longred_bench.reports.short_avg`: for ``short_tiny`` the passkey
  and the perplexity task are shown but never averaged);
- the RULER average over every task and length, and the score at each length;
- the NIAH grid's mean and heatmap;
- LongReD's ``Avg = (5 x Short Avg + RULER Avg) / 6`` and, for extended models, the retention
  ``extended / original`` of each of these;
- drift from the original: mean hidden-state cosine and attention KL, per layer in a figure.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from longred_bench.metrics.retention import category_means, longred_avg, retention
from longred_bench.reports import provenance
from longred_bench.reports.drift_report import cosines
from longred_bench.reports.pcd_settings import pcd_lines
from longred_bench.reports.short_avg import (
    HEADLINE,
    NO_GROUP,
    PASSKEY_TASK,
    SHORT_SUITES,
    short_avg,
    short_categories,
)
from longred_bench.results import over_length_documents
from longred_bench.wording import counted


def _missing(value: float | None) -> bool:
    return value is None or math.isnan(value)


def _fmt(value: float | None, digits: int = 1) -> str:
    return "" if _missing(value) else f"{value:.{digits}f}"


def _kl(value: float | None) -> str:
    """An attention KL to four significant digits, as drift.md writes it (``2.566e-04``; a fixed
    four decimals read 0.0002)."""
    return "" if value is None or math.isnan(value) else f"{value:.3e}"


def short_scores(records: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """``{label: {benchmark: score 0-100}}`` of the short-suite leaf tasks' headline metric."""
    labels = dict.fromkeys(r["label"] for r in records if _short_leaf(r))
    return {label: headline_scores([r for r in records if r.get("label") == label])
            for label in labels}  # fmt: skip


def _short_leaf(r: dict[str, Any]) -> bool:
    """A record of a short-suite task (not a group: it counts its documents)."""
    return (
        r.get("kind") == "eval"
        and r.get("suite") in SHORT_SUITES
        and (r.get("n_samples") is not None)
    )


def headline_scores(records: list[dict[str, Any]]) -> dict[str, float]:
    """``{benchmark: score 0-100}`` of one model's short-suite leaf tasks: each task's headline
    metric (:data:`HEADLINE`, the first it has in that order)."""
    found: dict[str, dict[str, float]] = defaultdict(dict)
    for r in records:
        base = r["metric"].split(",")[0] if _short_leaf(r) else None
        if base in HEADLINE:
            found[r["task"]].setdefault(base, 100.0 * float(r["value"]))
    return {task: next(m[h] for h in HEADLINE if h in m) for task, m in found.items()}


def ruler_scores(records: list[dict[str, Any]]) -> dict[str, dict[int | None, float]]:
    """``{label: {length or None (all lengths): score}}`` of the ``longred_ruler`` group."""
    out: dict[str, dict[int | None, float]] = defaultdict(dict)
    for r in records:
        if r.get("kind") == "eval" and r.get("task") == "longred_ruler" and r["metric"] == "score":
            out[r["label"]][r.get("length")] = float(r["value"])
    return dict(out)


def niah_means(records: list[dict[str, Any]]) -> dict[str, float]:
    """``{label: mean NIAH score over the grid's cells}``."""
    cells: dict[str, list[float]] = defaultdict(list)
    for r in records:
        if r.get("kind") == "niah":
            cells[r["label"]].append(float(r["score"]))
    return {label: sum(v) / len(v) for label, v in cells.items()}


def drift_summaries(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{label: drift summary record}``."""
    return {r["label"]: r for r in records if r.get("kind") == "drift_summary"}


def sample_sizes(records: list[dict[str, Any]]) -> str:
    """One sentence: how many documents each part of the comparison scored (per model)."""
    parts = []
    short = [
        r["n_samples"]
        for r in records
        if r.get("kind") == "eval"
        and r.get("suite") in ("short", "short_tiny")
        and r.get("n_samples") is not None
    ]
    if short:
        span = f"{min(short)}" if min(short) == max(short) else f"{min(short)}-{max(short)}"
        parts.append(f"short benchmarks {span} documents each")
    ruler = [
        r
        for r in records
        if r.get("kind") == "eval"
        and r.get("suite") == "ruler"
        and r.get("n_samples") is not None
        and r.get("length") is None
    ]
    if ruler:
        lengths = {r["length"] for r in records if r.get("suite") == "ruler" and r.get("length")}
        per = max(r["n_samples"] for r in ruler) // max(len(lengths), 1)
        parts.append(f"RULER {per} sample(s) per task and length")
    niah = [r for r in records if r.get("kind") == "niah"]
    if niah:
        cells = {(r["length"], r["depth"]) for r in niah}
        parts.append(f"NIAH {len(cells)} cells x {max(r['n'] for r in niah)} sample(s)")
    labels = list(dict.fromkeys(r["label"] for r in records if r.get("kind") == "eval"))
    over = {label: over_length_documents([r for r in records if r.get("label") == label])
            for label in labels}  # fmt: skip
    if len(set(over.values())) <= 1:
        parts.append(f"{next(iter(over.values()), 0)} document(s) skipped as over-length")
    else:
        each = ", ".join(f"{n} for {label}" for label, n in over.items())
        parts.append(f"document(s) skipped as over-length: {each}")
    return (
        "Per model: " + "; ".join(parts) + ". Small samples: differences of a few points are noise."
    )


def category_lines(
    short: dict[str, dict[str, float]], cats: dict[str, tuple[str, ...]], labels: list[str]
) -> list[str]:
    """The category means of each model and their mean, Short Avg (the Summary's column)."""
    if list(cats) == [NO_GROUP]:  # every task ran on its own: one category, the mean of them all
        return [f"Short Avg: the mean of the {len(cats[NO_GROUP])} benchmarks above (they ran on "
                "their own, not through a group of categories).", ""]  # fmt: skip
    means = {label: category_means(short[label], cats) for label in labels}
    lines = [
        "### Short Avg by category",
        "",
        "| category | benchmarks | " + " | ".join(labels) + " |",
        "|---|---|" + "---:|" * len(labels),
    ]
    for cat, members in cats.items():
        cells = [_fmt(means[label].get(cat)) for label in labels]
        lines.append(f"| {cat} | {', '.join(members)} | " + " | ".join(cells) + " |")
    avg = [_fmt(short_avg(short[label], cats)) for label in labels]
    lines += ["| **Short Avg** | mean of the categories | " + " | ".join(avg) + " |", ""]
    return lines


def _drift_of(label: str, drift: dict[str, Any], labels: list[str]) -> Any:
    """The drift summary of row ``label``: its own, or for a PCD row (``X +pcd``) its model's
    where no greedy row ``X`` shows it (drift is the weights', measured once, keyed ``X``)."""
    if label in drift:
        return drift[label]
    plain = label.removesuffix(" +pcd")
    return drift.get(plain) if plain not in labels else None


def _ratio(ext: float | None, orig: float | None) -> float | None:
    if ext is None or orig is None or math.isnan(ext) or math.isnan(orig) or orig == 0:
        return None
    return ext / orig


FIGURES = ("retention.png", "ruler_lengths.png", "niah.png", "drift.png")
"""The figures ``compare.md`` may show, each written beside it."""


def _what(command: str) -> list[str]:
    """The words of a compare command line that say what it compares (not ``--quiet``, not the
    ``--out`` it writes to)."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        return command.split()
    kept, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word == "--out":
            skip = True
        elif not word.startswith(("--out=", "--quiet")) and word != "-q":
            kept.append(word)
    return kept


def report_of_another(out: Path, command: str) -> str | None:
    """The command line of the ``compare.md`` in ``out`` where it is another comparison's than
    ``command``'s (other models, suites or settings), else None."""
    try:
        head = (out / "compare.md").read_text(encoding="utf-8").splitlines()[:8]
    except (OSError, UnicodeDecodeError):
        return None
    earlier = next((line[len("Command: `"):-1] for line in head
                    if line.startswith("Command: `") and line.endswith("`")), None)  # fmt: skip
    return earlier if earlier is not None and _what(earlier) != _what(command) else None


def build_compare_report(
    records: list[dict[str, Any]], labels: list[str], out: Path, *, title: str, command: str
) -> list[Path]:
    """Write ``out/compare.md`` and its figures from the records; return the paths."""
    from longred_bench.reports.compare_plot import plot_retention_bars
    from longred_bench.reports.ruler_plot import plot_ruler_lengths

    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    short = short_scores(records)
    cats = short_categories(records)
    ruler = ruler_scores(records)
    niah = niah_means(records)
    drift = drift_summaries(records)
    devices, code = provenance(records)
    original = labels[0]
    lines = [
        f"# {title}",
        "",
        f"Command: `{command}`",
        "",
        f"Device: {devices}. Commit {code}. Scores are 0-100; retention is extended / original.",
        "",
        *pcd_lines(records, windows=False),  # each model has its own windows
        sample_sizes(records),
        "",
    ]
    summary = {}
    for label in labels:
        s_avg = short_avg(short[label], cats) if label in short else None
        r_avg = ruler.get(label, {}).get(None)
        both = None if s_avg is None or r_avg is None else longred_avg(s_avg, r_avg)
        summary[label] = {"short": s_avg, "ruler": r_avg, "niah": niah.get(label), "avg": both}
    drift = {label: d for label in labels if (d := _drift_of(label, drift, labels))}
    measured = [b for b in labels if b in drift and not _missing(drift[b]["mean_hidden_cosine"])]
    cosine = dict(
        zip(measured, cosines([drift[lb]["mean_hidden_cosine"] for lb in measured]), strict=True)
    )
    base = summary[original]

    def ratio(label: str, what: str) -> str:
        return "" if label == original else _fmt(_ratio(summary[label][what], base[what]), 3)

    # (header, cell of a model, whether its suite ran): a suite not compared gets no column
    columns = [
        ("Short Avg", lambda lb: _fmt(summary[lb]["short"]), bool(short)),
        ("RULER Avg", lambda lb: _fmt(summary[lb]["ruler"]), bool(ruler)),
        ("NIAH mean", lambda lb: _fmt(summary[lb]["niah"]), bool(niah)),
        ("Avg (5 Short + RULER)/6", lambda lb: _fmt(summary[lb]["avg"]), bool(short and ruler)),
        ("Short retention", lambda lb: ratio(lb, "short"), bool(short)),
        ("RULER retention", lambda lb: ratio(lb, "ruler"), bool(ruler)),
        ("hidden cosine", lambda lb: str(cosine.get(lb, "")), bool(drift)),
        ("attention KL (nats/row)",
         lambda lb: _kl(drift[lb]["mean_attention_kl"]) if lb in drift else "", bool(drift)),
    ]  # fmt: skip
    shown = [(head, cell) for head, cell, ran in columns if ran]
    lines += [
        "## Summary",
        "",
        "| model | " + " | ".join(head for head, _ in shown) + " |",
        "|---|" + "---:|" * len(shown),
    ]
    lines += ["| " + " | ".join([label, *(cell(label) for _, cell in shown)]) + " |"
              for label in labels]  # fmt: skip
    lines.append("")
    if short:
        tasks = sorted({t for s in short.values() for t in s})
        ext = [label for label in labels[1:] if label in short]
        lines += [
            "## Short-text benchmarks",
            "",
            "| benchmark | category | " + " | ".join(labels) + " |",
            "|---|---|" + "---:|" * len(labels),
        ]
        group_of = {t: g for g, members in cats.items() for t in members}
        ratios = {
            label: retention(
                {t: short[original][t] for t in tasks if t in short[original]},
                {t: short[label][t] for t in tasks if t in short[original]},
            )
            for label in ext
        }
        for t in tasks:
            cells = [_fmt(short.get(original, {}).get(t))]
            for label in labels[1:]:
                value = short.get(label, {}).get(t)
                ratio = ratios.get(label, {}).get(t)
                extra = f" ({ratio:.3f})" if ratio is not None and not math.isnan(ratio) else ""
                cells.append(_fmt(value) + extra)
            category = group_of.get(t, "not averaged" + (" (retrieval)" * (t == PASSKEY_TASK)))
            lines.append(f"| {t} | {category} | " + " | ".join(cells) + " |")
        lines += ["", "In brackets: retention against the original.", ""]
        lines += category_lines(short, cats, [label for label in labels if label in short])
        if ratios:
            png = plot_retention_bars(ratios, out / "retention.png", "short-text retention")
            lines += [f"![retention]({png.name})", ""]
            paths.append(png)
    if ruler:
        lengths = sorted({n for s in ruler.values() for n in s if n is not None})
        lines += [
            "## RULER (13 tasks) by length",
            "",
            "| model | " + " | ".join(str(n) for n in lengths) + " | all lengths |",
            "|---|" + "---:|" * (len(lengths) + 1),
        ]
        for label in labels:
            if label in ruler:
                cells = [_fmt(ruler[label].get(n)) for n in lengths]
                lines.append(
                    f"| {label} | " + " | ".join(cells) + f" | {_fmt(ruler[label].get(None))} |"
                )
        series = {
            label: {n: v for n, v in ruler[label].items() if n is not None}
            for label in labels
            if label in ruler
        }
        png = plot_ruler_lengths(series, out / "ruler_lengths.png", "RULER average by length")
        lines += ["", f"![RULER by length]({png.name})", ""]
        paths.append(png)
    cells = [r for r in records if r.get("kind") == "niah"]
    if cells:
        from longred_bench.reports.niah_plot import plot_niah_heatmap

        png = plot_niah_heatmap(cells, out / "niah.png", "needle in a haystack")
        lines += ["## Needle in a haystack", "", f"![NIAH]({png.name})", ""]
        paths.append(png)
    layer_records = [r for r in records if r.get("kind") in ("drift_layer", "drift_summary")]
    if layer_records:
        from longred_bench.reports.drift_plot import plot_drift_layers
        from longred_bench.reports.drift_report import drift_frames

        first = next(r for r in layer_records if r["kind"] == "drift_summary")
        _, layers = drift_frames(layer_records)
        png = plot_drift_layers(layers, out / "drift.png", "drift from the original per layer")
        lines += [
            "## Drift from the original",
            "",
            f"`{first['texts']}`: {counted(int(first['num_texts']), 'window')} of "
            f"{first['seq_len']} tokens. "
            "Hidden cosine: mean over layers and tokens; attention KL: KL(original || "
            "extended) per query row, mean over layers, heads and rows.",
            "",
            f"![drift]({png.name})",
            "",
        ]
        paths.append(png)
    md = out / "compare.md"
    md.write_text("\n".join(lines), encoding="utf-8")
    for name in FIGURES:  # an earlier call's figure this report no longer shows (its records
        stale = out / name  # stay under runs/): it would read as this comparison's
        if stale not in paths and stale.is_file():
            stale.unlink()
    return [md, *paths]
