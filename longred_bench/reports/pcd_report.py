"""The ``reproduce pcd`` report: RULER by length, PSA curves and short tasks with and without
Positional Contrastive Decoding, a contrast-strength sweep, the cost per token, and one verdict
per claim and line, decided by rules in code.

Reads the tagged records of :func:`longred_bench.reproduce.pcd.run_pcd` and writes ``pcd.md`` and
``pcd.png`` (RULER mean and PSA salience against length, one line per extension and decoding).

Claims and rules (points are on a 0-100 scale; intervals are 95% paired bootstraps over the
documents both decodings scored, :func:`longred_bench.reports.verdicts.paired_diff`):

1. *The gold token stays highly ranked while its salience falls* (PSA, greedy decoding): the
   rule of :func:`longred_bench.reports.psa_report.psa_verdicts`.
2. *PCD improves long-context retrieval*: the interval of ``RULER(pcd) - RULER(greedy)`` (every
   task and length) lies entirely above 0 -> holds; entirely below 0 -> does not hold; else
   undecided.
3. *PCD does not hurt short tasks*: the interval of ``Short(pcd) - Short(greedy)`` (headline
   accuracy) lies entirely above ``-SHORT_MARGIN`` -> holds; entirely below 0 -> does not hold;
   else undecided.

No number of the PCD paper is shown beside ours: no source available here confirms its models,
benchmarks or numbers (``PCD.md``), and a number nobody can check is not put in a report.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path
from typing import Any

import pandas as pd

from longred_bench.reports.figures import save_figure
from longred_bench.reports.psa_report import (
    HOLDS,
    NOT_HOLDS,
    UNDECIDED,
    psa_verdicts,
    sample_frame,
    summarize,
)
from longred_bench.reports.verdicts import LEVEL, fmt_interval, paired_diff

SHORT_MARGIN = 1.0  # points: a short-task loss smaller than this is no harm
SHORT_METRIC = "acc"
CLAIMS = {
    "psa": "the gold token stays highly ranked while its salience falls (greedy)",
    "ruler": "PCD improves long-context retrieval (RULER)",
    "short": "PCD does not hurt short tasks",
}
NO_PAPER = (
    "No number of the PCD paper is shown beside ours: no source available here confirms its "
    "models, benchmarks or numbers (see `PCD.md`), so there is nothing checked to compare with."
)


def _name(line: str, decoding: str) -> str:
    return line if decoding == "greedy" else f"{line} +{decoding}"


def ruler_frame(records: list[dict[str, Any]], part: str = "ruler") -> pd.DataFrame:
    """Per-task RULER scores at each length of ``part``: line, decoding, task, length, value."""
    rows = [
        {k: r.get(k) for k in ("line", "decoding", "task", "length", "value", "alpha")}
        for r in records
        if r.get("part") == part and r.get("kind") == "eval" and r.get("metric") == "score"
        and r.get("length") is not None
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=["line", "decoding", "task", "length", "value", "alpha"])


def ruler_by_length(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean over tasks per (line, decoding, length); rows keep the order lines first appear."""
    return frame.groupby(["line", "decoding", "length"], sort=False)["value"].mean().reset_index()


def items(
    records: list[dict[str, Any]], part: str, line: str, decoding: str, metric: str
) -> dict[str, dict[Any, dict[int, float]]]:
    """Per-document scores (points) as ``{task: {length or metric: {doc_id: value}}}``."""
    out: dict[str, dict[Any, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    scale = 1.0 if part == "ruler" else 100.0
    for r in records:
        if (r.get("kind"), r.get("part"), r.get("line"), r.get("decoding")) != (
            "eval_item", part, line, decoding,
        ) or r.get("metric") != metric:  # fmt: skip
            continue
        member = r["length"] if r.get("length") is not None else metric
        out[r["task"]][member][int(r["doc_id"])] = scale * float(r["value"])
    return {t: dict(m) for t, m in out.items()}


def _line_of_extension(extension: str, records: list[dict[str, Any]]) -> str:
    return next((r["line"] for r in records if r.get("extension") == extension), extension)


def _lines(records: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(r["line"] for r in records if r.get("part") in ("ruler", "short")))


def pcd_verdicts(records: list[dict[str, Any]], top_k: int) -> list[tuple[str, str, str, str]]:
    """``(claim key, line, label, evidence)`` for every claim and line (see the module rules)."""
    out = []
    greedy_psa = [r for r in records if r.get("part") == "psa" and r["decoding"] == "greedy"]
    if greedy_psa:
        by_length = summarize(sample_frame(greedy_psa), ["extension", "length"], top_k)
        for v in psa_verdicts(by_length, top_k):
            a, b = v.shortest, v.longest
            text = (
                f"S first {a['s_first']:.3f} at {a['length']} -> {b['s_first']:.3f} at "
                f"{b['length']}; worst median gold rank {v.worst_median_rank:g}, top-k {top_k}"
            )
            out.append(("psa", _line_of_extension(v.extension, records), v.label, text))
    for key, part, metric in (("ruler", "ruler", "score"), ("short", "short", SHORT_METRIC)):
        for line in _lines(records):
            a = items(records, part, line, "greedy", metric)
            b = items(records, part, line, "pcd", metric)
            ci, n = paired_diff(a, b)
            if ci is None:
                out.append((key, line, UNDECIDED, "no document scored by both decodings"))
                continue
            if key == "ruler":
                label = HOLDS if ci.low > 0 else NOT_HOLDS if ci.high < 0 else UNDECIDED
            else:
                label = NOT_HOLDS if ci.high < 0 else HOLDS if ci.low > -SHORT_MARGIN else UNDECIDED
            text = f"PCD - greedy {fmt_interval(ci)} points ({LEVEL:.0%} paired, n={n} documents)"
            out.append((key, line, label, text))
    return out


def _cost_lines(model: str, bench_dir: Path) -> list[str]:
    path = bench_dir / f"pcd_cost_{model.replace('/', '_')}.csv"
    if not path.is_file():
        return [f"Not measured for `{model}` here: `nox -s bench_eval` writes `{path}`.", ""]
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    cols = ["length", "mode", "per_token_ms", "per_token_ratio", "kv_mib", "peak_rss_mib"]
    lines = [f"From `{path}` (`benchmarks/bench_pcd.py`; see its `.md` for the machine):", ""]
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(r.get(c, "") for c in cols) + " |" for r in rows]
    return [*lines, ""]


def pcd_markdown(
    records: list[dict[str, Any]], *, profile: str, model: str, command: str, seconds: float,
    top_k: int, bench_dir: Path,
) -> str:  # fmt: skip
    """The report's Markdown (see the module docstring)."""
    prov = next((r["provenance"] for r in records if "provenance" in r), {})
    params = next((r["pcd"] for r in records if r.get("part") == "ruler" and "pcd" in r), {})
    lines = [
        f"# Positional Contrastive Decoding on `{model}` (profile `{profile}`)",
        "",
        f"Command: `{command}`. Wall time {seconds / 60:.1f} min (cached units count as 0). "
        f"Device: {prov.get('device', '?')}. Commit `{prov.get('git_commit', '?')}`.",
        "",
        f"PCD as run on the original: `{params}` (unconfirmed points: `local_base`/"
        "`local_window`, `first_pair`, `loglikelihood`; see the README).",
        "",
        "## Verdicts",
        "",
    ]
    for key, line, label, text in pcd_verdicts(records, top_k):
        lines.append(f"- {CLAIMS[key]} — `{line}`: **{label}** ({text})")
    ruler = ruler_by_length(ruler_frame(records))
    lengths = sorted(ruler["length"].unique())
    lines += ["", "## RULER by length (mean over tasks, 0-100)", ""]
    lines += ["| line | " + " | ".join(map(str, lengths)) + " | mean |"]
    lines += ["|---|" + "---:|" * (len(lengths) + 1)]
    for (line, dec), rows in ruler.groupby(["line", "decoding"], sort=False):
        by = dict(zip(rows["length"], rows["value"], strict=True))
        cells = [f"{by[n]:.1f}" if n in by else "" for n in lengths]
        mean = f" | {rows['value'].mean():.1f} |"
        lines.append(f"| {_name(line, dec)} | " + " | ".join(cells) + mean)
    psa = [r for r in records if r.get("part") == "psa"]
    if psa:
        by_length = summarize(sample_frame(psa), ["extension", "length"], top_k)
        lines += ["", "## PSA: salience of the gold token (S first) and its rank", ""]
        lines += ["| line | length | n | S first [95% CI] | median rank | mean P(gold) |"]
        lines += ["|---|---:|---:|---|---:|---:|"]
        for r in by_length.to_dict("records"):
            lines.append(
                f"| {r['extension']} | {r['length']} | {r['n']} | {r['s_first']:.3f} "
                f"[{r['s_first_low']:.3f}, {r['s_first_high']:.3f}] | {r['median_rank']:g} | "
                f"{r['mean_probability']:.3f} |"
            )
        lines += [
            "",
            "Under PCD the rank is in the distribution PCD decodes from (the top-k set of the "
            "standard logits; a gold token outside it has rank k + 1).",
        ]
    sweep = ruler_frame(records, "sweep")
    if not sweep.empty:
        task, length = sweep["task"].iloc[0], int(sweep["length"].iloc[0])
        lines += ["", f"## Contrast strength sweep: `{task}` at {length} tokens", ""]
        lines += ["| alpha | score |", "|---:|---:|"]
        for alpha, rows in sweep.groupby("alpha"):
            lines.append(f"| {alpha:g} | {rows['value'].mean():.1f} |")
    lines += ["", "## Short tasks (headline accuracy, 0-100)", "", "| line | greedy | PCD |"]
    lines += ["|---|---:|---:|"]
    for line in _lines(records):
        cells = []
        for dec in ("greedy", "pcd"):
            vals = [v for t in items(records, "short", line, dec, SHORT_METRIC).values()
                    for m in t.values() for v in m.values()]  # fmt: skip
            cells.append(f"{sum(vals) / len(vals):.1f}" if vals else "")
        lines.append(f"| {line} | " + " | ".join(cells) + " |")
    lines += ["", "## Cost per generated token", "", *_cost_lines(model, bench_dir)]
    lines += ["## The paper's numbers", "", NO_PAPER, ""]
    return "\n".join(lines)


def _base(extension: str) -> str:
    """The line an extension label belongs to (``"abf +pcd"`` -> ``"abf"``)."""
    return extension.removesuffix(" +pcd")


def plot_pcd(records: list[dict[str, Any]], path: Path, title: str, top_k: int) -> Path:
    """RULER mean (left) and PSA S first (right) against length, one line per line+decoding."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2))
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
        ax.legend(fontsize=8)
    fig.suptitle(title)
    return save_figure(fig, path, dpi=110)


def build_pcd_report(
    records: list[dict[str, Any]], out: Path, *, profile: str, model: str, command: str,
    seconds: float, top_k: int, bench_dir: Path = Path("reports") / "bench",
) -> list[Path]:  # fmt: skip
    """Write ``out/pcd.md`` and ``out/pcd.png``; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    md = out / "pcd.md"
    md.write_text(
        pcd_markdown(records, profile=profile, model=model, command=command, seconds=seconds,
                     top_k=top_k, bench_dir=bench_dir),
        encoding="utf-8",
    )  # fmt: skip
    title = f"PCD on {model} (profile {profile})"
    return [md, plot_pcd(records, out / "pcd.png", title, top_k)]
