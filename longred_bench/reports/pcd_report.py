"""The ``reproduce pcd`` report: PCD's settings chosen on a dev split, then RULER by length, PSA
curves and short tasks with and without Positional Contrastive Decoding on a test split, a few
failures read from the generated strings, the cost per token, and one verdict per claim and line,
decided by rules in code.

Reads the tagged records of ``reproduce pcd`` (:mod:`longred_bench.reproduce.pcd`) and writes
``pcd.md`` and ``pcd.png`` (RULER mean and PSA salience against length, one line per extension
and decoding).

The dev table lists every (alpha, local fraction) of the grid with its mean dev RULER score per
dev line, greedy decoding (alpha 0) first, and marks the setting chosen by
:func:`longred_bench.pcd.selection.choose` (recomputed here from the dev records).

Claims and rules on the test split (points are on a 0-100 scale; intervals are 95% paired
bootstraps over the documents both decodings scored,
:func:`longred_bench.reports.verdict_stats.paired_diff`), in the labels of
:mod:`~longred_bench.reports.verdict_rules` (:func:`~longred_bench.reports.verdict_rules.judge`;
no paper effect is ruled out, see below):

1. *The gold token stays highly ranked while its salience falls* (PSA, greedy decoding): the
   rule of :func:`longred_bench.reports.psa_report.psa_verdicts`.
2. *PCD improves long-context retrieval*, per line and per region (lengths within the line's
   window, its config's ``max_position_embeddings``, and lengths beyond it): both decodings'
   means below :data:`~longred_bench.reports.verdict_rules.RULER_FLOOR` -> not comparable
   (the floor: there is no retrieval to improve); else the interval of
   ``RULER(pcd) - RULER(greedy)`` entirely above 0 -> reproduced; entirely below 0 -> not
   reproduced; else undecided.
3. *PCD does not hurt short tasks*: the interval of ``Short(pcd) - Short(greedy)`` (headline
   accuracy; under PCD a choice scores the contrast of its two log-likelihoods) entirely above
   ``-SHORT_MARGIN`` -> reproduced; entirely below ``-SHORT_MARGIN`` -> not reproduced; else
   undecided. Perplexities under PCD are not defined and are shown as such.

A claim with no document scored by both decodings, or one per task (nothing to resample), has
no interval: not comparable.

No number of the PCD paper is shown beside ours: no source available here confirms its models,
benchmarks or numbers (``PCD.md``), and a number nobody can check is not put in a report.
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import pandas as pd

from longred_bench.data.sources import zoo_weights
from longred_bench.metrics.retention import mean_of_means
from longred_bench.metrics.stats import Interval
from longred_bench.pcd.config import PcdConfig
from longred_bench.pcd.selection import choose, dev_scores
from longred_bench.reports import model_named, provenance
from longred_bench.reports.pcd_failures import failures
from longred_bench.reports.psa_report import psa_rule, psa_verdicts, sample_frame, summarize
from longred_bench.reports.verdict_rules import (
    ABOVE,
    LABEL_RULE,
    NOT_COMPARABLE,
    RULER_FLOOR,
    below_ruler_floor,
    fmt_interval,
    judge,
)
from longred_bench.reports.verdict_stats import (
    LEVEL,
    no_interval_text,
    paired_diff,
    shared_means,
)

SHORT_MARGIN = 1.0  # points: a short-task loss smaller than this is no harm
RULE_RULER = (
    f"both decodings' RULER means (on the samples both scored) below the floor of "
    f"{RULER_FLOOR:g} points -> not comparable "
    f"(no retrieval to improve); else the {LEVEL:.0%} paired bootstrap interval (the samples "
    "both decodings scored) of RULER(pcd) - RULER(greedy): entirely above 0 -> reproduced; "
    "entirely below 0 -> not reproduced; otherwise undecided."
)
RULE_SHORT = (
    f"the {LEVEL:.0%} paired bootstrap interval (the documents both decodings scored) of "
    f"Short(pcd) - Short(greedy), headline accuracy: entirely above -{SHORT_MARGIN:g} point (a "
    f"smaller loss is no harm) -> reproduced; entirely below -{SHORT_MARGIN:g} -> not "
    "reproduced; otherwise undecided."
)
SHORT_METRIC = "acc"
CLAIMS = {
    "psa": "the gold token stays highly ranked while its salience falls (greedy)",
    "ruler": "PCD improves long-context retrieval (RULER)",
    "short": "PCD does not hurt short tasks",
}
NO_PAPER = (
    "No number of the PCD paper is shown beside ours: no source available here confirms its "
    "models, benchmarks or numbers (see docs/pcd.md), so there is nothing checked to compare with."
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
    records: list[dict[str, Any]],
    part: str,
    line: str,
    decoding: str,
    metric: str,
    lengths: set[int] | None = None,
) -> dict[str, dict[Any, dict[int, float]]]:
    """Per-document scores (points) as ``{task: {length or metric: {doc_id: value}}}``, only at
    ``lengths`` when given."""
    out: dict[str, dict[Any, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    scale = 1.0 if part == "ruler" else 100.0
    for r in records:
        if (r.get("kind"), r.get("part"), r.get("line"), r.get("decoding")) != (
            "eval_item", part, line, decoding,
        ) or r.get("metric") != metric:  # fmt: skip
            continue
        if lengths is not None and r.get("length") not in lengths:
            continue
        member = r["length"] if r.get("length") is not None else metric
        out[r["task"]][member][int(r["doc_id"])] = scale * float(r["value"])
    return {t: dict(m) for t, m in out.items()}


def _line_of_extension(extension: str, records: list[dict[str, Any]]) -> str:
    return next((r["line"] for r in records if r.get("extension") == extension), extension)


def _lines(records: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(r["line"] for r in records if r.get("part") in ("ruler", "short")))


def line_window(records: list[dict[str, Any]], line: str) -> int | None:
    """The window of ``line`` as evaluated: its config's ``max_position_embeddings``."""
    found = (int(r["max_position_embeddings"]) for r in records if r.get("line") == line
             and r.get("part") == "ruler" and r.get("max_position_embeddings"))  # fmt: skip
    return next(found, None)


def regions(records: list[dict[str, Any]], line: str) -> list[tuple[str, set[int]]]:
    """``(name, lengths)`` of the test RULER lengths of ``line`` within its window and beyond
    it (a region without lengths is left out)."""
    lengths = {int(r["length"]) for r in records if r.get("line") == line
               and r.get("part") == "ruler" and r.get("length") is not None}  # fmt: skip
    window = line_window(records, line)
    if window is None:
        return [("all lengths", lengths)] if lengths else []
    inside = {n for n in lengths if n <= window}
    out = [(f"within its window ({window})", inside), (f"beyond its window ({window})",
                                                        lengths - inside)]  # fmt: skip
    return [(name, ls) for name, ls in out if ls]


def ruler_verdict(
    ci: Interval, n: int, greedy: float, pcd: float, unit: str = "samples"
) -> tuple[str, str]:
    """``(label, evidence)`` of the RULER claim from the paired interval of PCD - greedy over
    ``n`` samples and the two decodings' mean scores (rule 2 of the module docstring)."""
    text = f"PCD - greedy {fmt_interval(ci)} points ({LEVEL:.0%} paired, n={n} {unit})"
    if below_ruler_floor(greedy, pcd):
        return NOT_COMPARABLE, (
            f"greedy {greedy:.1f}, PCD {pcd:.1f}: both below the floor of {RULER_FLOOR:g} points; "
            + text
        )
    return judge(ci, ABOVE), text


def pcd_verdicts(records: list[dict[str, Any]], top_k: int) -> list[tuple[str, str, str, str]]:
    """``(claim key, line, label, evidence)`` for every claim and line (see the module rules);
    the RULER claim once per region of the line."""
    out = []
    greedy_psa = [r for r in records if r.get("part") == "psa" and r["decoding"] == "greedy"]
    if greedy_psa:
        by_length = summarize(sample_frame(greedy_psa), ["extension", "length"], top_k)
        for v in psa_verdicts(by_length, top_k):
            a, b = v.shortest, v.longest
            text = (
                f"S first {a['s_first']:.3f} at {a['length']} -> {b['s_first']:.3f} at "
                f"{b['length']}"
                + ("" if v.fall is None else f", change {fmt_interval(v.fall, 3)}")
                + f"; lowest top-{top_k} share {v.share_text()}"
            )
            out.append(("psa", _line_of_extension(v.extension, records), v.label, text))
    for line in _lines(records):
        for region, lengths in regions(records, line):
            a = items(records, "ruler", line, "greedy", "score", lengths)
            b = items(records, "ruler", line, "pcd", "score", lengths)
            ci, n = paired_diff(a, b)
            if ci is None:
                out.append(("ruler", f"{line}, {region}", NOT_COMPARABLE,
                            no_interval_text(n, "per-sample")))  # fmt: skip
                continue
            label, text = ruler_verdict(ci, n, *shared_means(a, b))
            out.append(("ruler", f"{line}, {region}", label, text))
    for line in _lines(records):
        ci, n = paired_diff(items(records, "short", line, "greedy", SHORT_METRIC),
                            items(records, "short", line, "pcd", SHORT_METRIC))  # fmt: skip
        if ci is None:
            out.append(("short", line, NOT_COMPARABLE, no_interval_text(n, "per-document")))
            continue
        label = judge(ci, ABOVE, bound=-SHORT_MARGIN)
        text = f"PCD - greedy {fmt_interval(ci)} points ({LEVEL:.0%} paired, n={n} documents)"
        out.append(("short", line, label, text))
    return out


def dev_table(records: list[dict[str, Any]]) -> list[str]:
    """The dev grid as Markdown rows: mean dev RULER per setting and dev line, the chosen
    setting in bold (empty when there are no dev records)."""
    dev = [r for r in records if r.get("part") == "dev" and r.get("kind") == "eval_item"
           and r.get("metric") == "score"]  # fmt: skip
    if not dev:
        return []
    lines = list(dict.fromkeys(r["line"] for r in dev))
    per: dict[tuple, list[float]] = defaultdict(list)
    for r in dev:
        per[(float(r["alpha"]), r.get("local_fraction"), r["line"])].append(float(r["value"]))
    overall = dev_scores(dev)
    grid = [PcdConfig(alpha=a, local_fraction=f) for a, f in overall if a > 0]
    best = choose(dev, grid) if grid else None
    chosen = None if best is None else (best.alpha, best.local_fraction)
    samples = {(r["task"], r["length"], r["doc_id"]) for r in dev}
    seeds = sorted({r.get("seed") for r in dev if r.get("seed") is not None})
    out = [
        f"Dev split: RULER samples of another generator seed than the test samples "
        f"({len(samples)} samples per setting and line: "
        f"{len({t for t, _, _ in samples})} tasks x lengths "
        f"{', '.join(map(str, sorted({n for _, n, _ in samples})))}). "
        "Chosen: the highest mean over every dev line (ties: smaller alpha, then smaller "
        "fraction); alpha 0 (greedy) is the reference, not a candidate."
        + (f" Seeds: {seeds}." if seeds else ""),
        "",
        "| alpha | local fraction | " + " | ".join(lines) + " | mean |",
        "|---:|---:|" + "---:|" * (len(lines) + 1),
    ]
    for key in sorted(overall, key=lambda k: (k[0], k[1] or 0.0)):
        alpha, fraction = key
        cells = [per.get((alpha, fraction, line)) for line in lines]
        row = [f"{alpha:g}", "-" if fraction is None else f"{fraction:g}"]
        row += [f"{sum(c) / len(c):.1f}" if c else "" for c in cells]
        row.append(f"{overall[key]:.1f}")
        if key == chosen:
            row = [f"**{x}**" for x in row]
        out.append("| " + " | ".join(row) + " |")
    return out


def _perplexities(records: list[dict[str, Any]]) -> list[str]:
    """Rows ``| line | task | greedy | PCD |`` of every perplexity-like short metric; under PCD
    always "not defined" (lm-eval computes them from the choice scores, which under PCD are
    contrasts, not log-probabilities)."""
    cells: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for r in records:
        if (r.get("part") == "short" and r.get("kind") == "eval"
                and "perplexity" in str(r.get("metric"))):  # fmt: skip
            cells[(r["line"], r["task"])][r["decoding"]] = r["value"]
    rows = []
    for (line, task), by in cells.items():
        greedy = by.get("greedy")
        shown = "" if greedy is None or math.isnan(float(greedy)) else f"{float(greedy):.1f}"
        pcd = "not defined" if "pcd" in by else ""
        rows.append(f"| {line} | {task} | {shown} | {pcd} |")
    return rows


def _settings_lines(records: list[dict[str, Any]]) -> list[str]:
    """PCD's parameters as run on the test split, with each line's local windows and bases."""
    runs = {r["line"]: r["pcd"] for r in records if r.get("part") == "ruler"
            and r.get("kind") == "eval" and isinstance(r.get("pcd"), dict)}  # fmt: skip
    if not runs:
        return ["No PCD test unit in these records."]
    first = next(iter(runs.values()))
    keep = ("alpha", "plausibility", "beta", "top_k", "first_pair", "window_rule")
    params = ", ".join(f"{k} = {first.get(k)}" for k in keep if first.get(k) is not None)
    out = [f"PCD on the test split, every line: {params} (unconfirmed: the window rule, "
           "the plausibility cut, `first_pair`, the choice scoring; see `docs/pcd.md`).",
           "", "| line | local window W' -> base B' |", "|---|---|"]  # fmt: skip
    for line, pcd in runs.items():
        pairs = ", ".join(
            f"{w['window']} -> {'none' if w['base'] is None else format(w['base'], '.4g')}"
            for w in pcd.get("local", [])
        )
        out.append(f"| {line} | {pairs} |")
    return out


def _cost_lines(model: str, bench_dir: Path) -> list[str]:
    path = bench_dir / f"pcd_cost_{model.replace('/', '_')}.csv"
    if not path.is_file():
        return [f"Not measured for `{model}` here: `python benchmarks/bench_pcd.py --models "
                f"{model} --out {bench_dir}` writes `{path}`.", ""]  # fmt: skip
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    cols = ["length", "mode", "per_token_ms", "per_token_ratio", "kv_mib", "peak_rss_mib"]
    lines = [f"From `{path}` (`benchmarks/bench_pcd.py`; see its `.md` for the machine):", ""]
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(r.get(c, "") for c in cols) + " |" for r in rows]
    return [*lines, ""]


def unit_cost_line(records: list[dict[str, Any]]) -> str:
    """One line on the units behind ``records`` (tagged ``unit`` and ``unit_seconds`` by
    ``reproduce pcd``): how many, the commits they were computed at (and the source hashes of
    those records that carry one), and their summed compute time where it was recorded."""
    units: dict[str, tuple[Any, Any]] = {}
    for r in records:
        if "unit" in r:
            commit = (r.get("provenance") or {}).get("git_commit", "not recorded")
            units.setdefault(r["unit"], (commit, r.get("unit_seconds")))
    if not units:
        return f"Commit {provenance(records)[1]}; the units are not named in these records."
    per_commit: dict[str, int] = defaultdict(int)
    for commit, _ in units.values():
        per_commit[str(commit)] += 1
    at = ", ".join(f"`{c}` ({n})" for c, n in sorted(per_commit.items()))
    timed = [s for _, s in units.values() if isinstance(s, (int, float))]
    cost = (
        f"compute recorded for {len(timed)} of them: {sum(timed) / 60:.1f} min"
        if timed
        else "their compute time was not recorded (saved before it was)"
    )
    sources = provenance(records)[1].partition("; source ")[2]
    at += f" (source {sources})" if sources else ""
    return f"Units: {len(units)}, computed at commits {at}; {cost}."


def multiplicity_line(verdicts: list[tuple[str, str, str, str]]) -> str:
    """How many of the verdicts compared intervals (not the not-comparable ones), per claim,
    each at :data:`LEVEL` and not corrected for multiple comparisons, and that PCD's settings
    were chosen on the dev split's samples."""
    tested = [v for v in verdicts if v[2] != NOT_COMPARABLE]
    counts = {k: sum(v[0] == k for v in tested) for k in CLAIMS}
    names = {"psa": "PSA", "ruler": "RULER", "short": "short tasks"}
    parts = ", ".join(f"{n} for {names[k]}" for k, n in counts.items() if n) or "none"
    return (f"{len(tested)} of the {len(verdicts)} verdicts above compared intervals at "
            f"{LEVEL:.0%} ({parts}; a PSA verdict reads two, its fall and its top-k shares), "
            "not corrected for multiple comparisons: among many tests, one interval clear of "
            "its bound is expected by chance now and then. PCD's setting was chosen on the dev "
            "split (other samples of the same tasks and lengths).")  # fmt: skip


def short_table(records: list[dict[str, Any]]) -> list[str]:
    """Each line's Short under greedy decoding and PCD: the mean over the short tasks of each
    task's mean over its documents (the statistic the short rule compares), with the sentence
    saying so."""
    lines = ["Short: the mean over the short tasks of each task's mean over its scored "
             "documents (the `Short` of the rule above, there on the documents both decodings "
             "scored), not LongReD's Short Avg of the tables (a mean over categories).",
             "", "| line | greedy | PCD |", "|---|---:|---:|"]  # fmt: skip
    for line in _lines(records):
        cells = []
        for dec in ("greedy", "pcd"):
            scored = items(records, "short", line, dec, SHORT_METRIC)
            cells.append(f"{mean_of_means(scored):.1f}" if scored else "")
        lines.append(f"| {line} | " + " | ".join(cells) + " |")
    return lines


def pcd_markdown(
    records: list[dict[str, Any]], *, profile: str, model: str, command: str, seconds: float,
    top_k: int, bench_dir: Path, wall_note: str = "cached units count as 0",
) -> str:  # fmt: skip
    """The report's Markdown (see the module docstring); ``wall_note`` says how the call's wall
    time was taken (a rebuild's says it computed nothing)."""
    device, _ = provenance(records)
    lines = [
        f"# Positional Contrastive Decoding on `{model}` (profile `{profile}`)",
        "",
        *([f"Model: {model_named(model)}.", ""] if zoo_weights(model) else []),
        f"Command: `{command}`. Wall time {seconds / 60:.1f} min ({wall_note}). Device: {device}.",
        "",
        unit_cost_line(records),
        "",
        "## PCD's settings, chosen on the dev split",
        "",
        *dev_table(records),
        "",
        *_settings_lines(records),
        "",
        "## Verdicts (test split)",
        "",
        LABEL_RULE,
        "",
        "Rules:",
        "",
        f"- {CLAIMS['psa']}: {psa_rule(top_k)}",
        f"- {CLAIMS['ruler']}, per line and per region (lengths within the line's window and "
        f"beyond it): {RULE_RULER}",
        f"- {CLAIMS['short']}: {RULE_SHORT}",
        "- A claim with no item scored by both decodings: not comparable.",
        "",
    ]
    verdicts = pcd_verdicts(records, top_k)
    for key, line, label, text in verdicts:
        lines.append(f"- {CLAIMS[key]} — `{line}`: **{label}** ({text})")
    lines += ["", multiplicity_line(verdicts)]
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
            "Under PCD the rank is in the distribution PCD decodes from (the contrast on the "
            "plausible tokens of the standard pass; a gold token outside them, which PCD never "
            "emits, has rank one past their number in the median rank, and counts as unranked "
            "in S first and the top-k share).",
        ]
    lines += ["", "## Short tasks (headline accuracy, 0-100)", "", *short_table(records)]
    ppl = _perplexities(records)
    if ppl:
        lines += ["", "Perplexity under PCD is not defined: the contrast is not a distribution "
                  "over texts, so a perplexity lm-eval derives from PCD's scores is not shown:",
                  "", "| line | task | greedy | PCD |", "|---|---|---:|---:|", *ppl]  # fmt: skip
    lines += ["", "## Where PCD loses: test samples greedy decoding got and PCD did not", ""]
    lines += failures(records)
    lines += ["", "## Cost per generated token", "", *_cost_lines(model, bench_dir)]
    lines += ["## The paper's numbers", "", NO_PAPER, ""]
    return "\n".join(lines)
