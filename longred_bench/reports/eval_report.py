"""The report of one ``longred-bench eval`` run: ``eval.md`` and the suite's figures.

Built only from the run's records (``eval.jsonl``): lm-eval metrics as a table with one row per
task (RULER's scores by length as columns of it), the NIAH depth x length grid and heatmap,
long-document perplexity by position bucket with its plot, and for ``paper_short`` its members
(paper vs suite) and LongReD's Short Avg by category.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from longred_bench.metrics.retention import category_means
from longred_bench.reports import provenance
from longred_bench.reports.pcd_settings import pcd_lines
from longred_bench.reports.ruler_plot import plot_ruler_lengths
from longred_bench.reports.short_avg import paper_categories, paper_scores, short_avg


def _fmt(value: Any, digits: int = 4) -> str:
    """``value`` at ``digits`` decimals; one of a million or more (a random model's perplexity,
    its stderr) with ``digits`` significant digits and an exponent instead of 20 figures."""
    if value is None:
        return ""
    if isinstance(value, int | float) and abs(value) >= 1e6:
        return f"{value:.{digits}g}"
    return f"{value:.{digits}f}"


def metrics_table(records: list[dict[str, Any]]) -> list[str]:
    """Markdown rows, one per task or group (kind ``eval``): each metric over the whole task as
    ``value ± stderr``, then, where the suite scores by length (RULER), the score at each
    length, the documents scored and those skipped as over-length; a metric with no value in
    this run (``not_defined``: a perplexity under PCD) reads "not defined", with why below."""
    rows: dict[str, dict[str, Any]] = {}
    columns: list[str] = []
    undefined: set[str] = set()
    for r in records:
        if r.get("kind") != "eval":
            continue
        row = rows.setdefault(r["task"], {"n": None, "over": 0, "cells": {}})
        if r.get("length") is None:  # the task's count (a per-length record counts its own)
            row["n"] = r.get("n_samples")
        row["over"] = max(row["over"], r.get("n_over_length", 0) or 0)
        if r.get("length") is None:
            column = r["metric"]
            cell = _fmt(r["value"]) + ("" if r.get("stderr") is None else f" ± {_fmt(r['stderr'])}")
        else:
            column, cell = f"{r['metric']} at {r['length']}", _fmt(r["value"])
        if r.get("not_defined"):
            cell = "not defined"
            undefined.add(str(r["not_defined"]))
        row["cells"][column] = cell
        if column not in columns:
            columns.append(column)
    by_length = sorted((c for c in columns if " at " in c), key=lambda c: int(c.split()[-1]))
    columns = [c for c in columns if " at " not in c] + by_length
    header = [f"{c} (all lengths)" if by_length and c == "score" else c for c in columns]
    lines = [
        "| task | " + " | ".join(header) + " | n | over-length |",
        "|---|" + "---:|" * (len(columns) + 2),
    ]
    groups = {r.get("group") for r in records if r.get("kind") == "eval"}
    for task, row in rows.items():
        cells = [row["cells"].get(c, "") for c in columns]
        n = "" if row["n"] is None else str(row["n"])
        name = f"{task} (group)" if task in groups else task  # lm-eval's mean, not Short Avg
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {n} | {row['over']} |")
    if groups & set(rows):  # RULER's and NIAH's scores (by length) are 0-100
        scale = "scores 0-100" if by_length else "accuracies as fractions"
        lines += ["", f"Values as lm-eval reports them ({scale}). A (group) row is lm-eval's own "
                  "aggregate of its members, metric by metric, not LongReD's Short Avg (below, "
                  "where the suite has one)."]  # fmt: skip
    if undefined:  # a metric with no value here, and why (a perplexity under PCD)
        lines += ["", f"not defined: {'; '.join(sorted(undefined))}."]
    return lines


def ruler_matrix(records: list[dict[str, Any]]) -> dict[str, dict[int, float]]:
    """``{task: {length: score}}`` of the per-length RULER records (no filter suffix)."""
    matrix: dict[str, dict[int, float]] = defaultdict(dict)
    for r in records:
        if r.get("kind") == "eval" and r.get("length") is not None and r["metric"] == "score":
            matrix[r["task"]][int(r["length"])] = float(r["value"])
    return dict(matrix)


def _niah_lines(cells: list[dict[str, Any]]) -> list[str]:
    lengths = sorted({c["length"] for c in cells})
    depths = sorted({c["depth"] for c in cells})
    score = {(c["depth"], c["length"]): c["score"] for c in cells}
    lines = [
        "| depth % | " + " | ".join(str(n) for n in lengths) + " |",
        "|---:|" + "---:|" * len(lengths),
    ]
    for d in depths:
        lines.append(f"| {d} | " + " | ".join(_fmt(score.get((d, n)), 1) for n in lengths) + " |")
    return lines


def _ppl_lines(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| corpus | length | positions | ppl | nll | tokens |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for r in sorted(rows, key=lambda r: (r["corpus"], r["length"], r["bucket_start"])):
        lines.append(
            f"| {r['corpus']} | {r['length']} | {r['bucket_start']}-{r['bucket_end']} "
            f"| {r['ppl']:.3f} | {r['nll']:.4f} | {r['n_tokens']} |"
        )
    return lines


def paper_short_lines(records: list[dict[str, Any]]) -> list[str]:
    """Markdown rows of ``paper_short``'s Short Avg (0-100): each category's members (``*``:
    named by LongReD), their mean and the mean of the means (none without such records)."""
    cats, scores = paper_categories(records), paper_scores(records)
    if not cats:
        return []
    source = {r["task"]: r.get("source") for r in records if r.get("category")}
    means = category_means(scores, cats)
    lines = ["| category | tasks (* named by LongReD) | mean |", "|---|---|---:|"]
    for category, tasks in cats.items():
        named = ", ".join(t + ("*" if source.get(t) == "paper" else "") for t in tasks)
        lines.append(f"| {category} | {named} | {100 * means[category]:.2f} |")
    lines.append(f"| Short Avg ({len(cats)} categories) | | {100 * short_avg(scores, cats):.2f} |")
    return lines


def suite_short_lines(records: list[dict[str, Any]]) -> list[str]:
    """Markdown rows of the ``short`` or ``short_tiny`` suite's Short Avg (0-100), as compare
    and the tables compute it: each category's tasks and their mean headline score, then the
    mean of the means (none without such records)."""
    from longred_bench.reports.compare_report import headline_scores
    from longred_bench.reports.short_avg import NO_GROUP, short_categories

    cats = short_categories(records)
    scores = headline_scores(records)
    means = category_means(scores, cats)
    if not means:
        return []
    if list(means) == [NO_GROUP]:  # every task ran on its own (--tasks): no categories
        tasks = cats[NO_GROUP]
        return [f"Short Avg: {means[NO_GROUP]:.2f}, the mean of the {len(tasks)} tasks above "
                f"({', '.join(tasks)}): they ran on their own, not through LongReD's category "
                "groups, so it is no mean of category means."]  # fmt: skip
    lines = ["| category | tasks | mean |", "|---|---|---:|"]
    lines += [f"| {c} | {', '.join(cats[c])} | {means[c]:.2f} |" for c in means]
    many = f"{len(means)} {'category' if len(means) == 1 else 'categories'}"
    lines.append(f"| Short Avg ({many}) | | {short_avg(scores, cats):.2f} |")
    return lines


def write_eval_report(
    records: list[dict[str, Any]],
    out: Path,
    title: str,
    members: list[str] | None = None,
    samples: dict[Path, int] | None = None,
    command: str | None = None,
) -> list[Path]:
    """Write ``out/eval.md`` and the figures the records call for; return the paths.
    ``members`` (one line per suite member) is shown as written, above the Short Avg;
    ``samples`` (``eval --log-samples``: each file of logged documents, relative to ``out``, and
    its number of documents) is listed at the end. Below the title: ``command`` (the command
    line), then the device and commit the records name."""
    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    lines = [f"# {title}", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    devices, code = provenance(records)
    lines += [f"Device: {devices}. Commit {code}.", ""]
    lines += pcd_lines(records)
    if any(r.get("kind") == "eval" for r in records):
        lines += [*metrics_table(records), ""]
    if members:
        lines += ["## Members (paper: named by LongReD; suite: completes its 17)", "", "```",
                  *members, "```", ""]  # fmt: skip
    short = paper_short_lines(records) or suite_short_lines(records)
    if short:
        lines += ["## Short Avg (mean of the category means)", "", *short, ""]
    matrix = ruler_matrix(records)
    if matrix:
        png = plot_ruler_lengths(matrix, out / "ruler_lengths.png", "RULER score by length")
        lines += [f"![RULER by length]({png.name})", ""]
        paths.append(png)
    cells = [r for r in records if r.get("kind") == "niah"]
    if cells:
        from longred_bench.reports.niah_plot import plot_niah_heatmap

        lines += ["## Needle in a haystack (score 0-100)", "", *_niah_lines(cells), ""]
        png = plot_niah_heatmap(cells, out / "niah.png", title.replace("`", ""))
        lines += [f"![NIAH heatmap]({png.name})", ""]
        paths.append(png)
    ppl = [r for r in records if r.get("kind") == "ppl"]
    if ppl:
        from longred_bench.reports.ppl_plot import plot_position_ppl

        lines += ["## Perplexity by position", "", *_ppl_lines(ppl), ""]
        png = plot_position_ppl(ppl, out / "ppl_position.png", title.replace("`", ""))
        lines += [f"![perplexity by position]({png.name})", ""]
        paths.append(png)
    if samples:
        lines += ["## Logged samples (one JSON line per document, gzipped)", "",
                  "| file | documents |", "|---|---|",
                  *(f"| `{path.as_posix()}` | {n} |" for path, n in sorted(samples.items())),
                  ""]  # fmt: skip
    md = out / "eval.md"
    md.write_text("\n".join(lines), encoding="utf-8")
    return [md, *paths]
