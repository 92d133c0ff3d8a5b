"""LongReD Table 2 at a profile: long-only against long+short CPT data, per task, its claim decided.

Built from the records of ``reproduce table2`` (Table 3's record schema,
:mod:`longred_bench.reports.table3`): the original model, each zero-shot extension, ``cpt``
(long data only), ``long-short-cpt`` (half of the long tokens replaced by text of the original
window) and ``mix-cpt`` (LongReD's 4 : 3 : 1 mix) where present. Sections: Table 3's (per seed,
with intervals over the scored documents), then the paper's Table 2 beside ours task by task (each
row's mean over its seeds and the difference ``long-short-cpt - cpt`` with its interval over
seeds and paired documents), the verdict of :mod:`longred_bench.reports.table2_verdicts`, and a
figure of the differences.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from longred_bench.metrics.stats import Interval
from longred_bench.reports.figures import save_figure
from longred_bench.reports.paper import TABLE2, TABLE2_MARK, TABLE2_SETTING
from longred_bench.reports.premises import extension_premises
from longred_bench.reports.run_sections import (
    results_table,
    ruler_scope,
    run_header,
    run_sections,
    task_name,
)
from longred_bench.reports.runs import (
    Run,
    RunKey,
    baseline,
    extension_factor,
    extensions,
    method_runs,
    run_scores,
    seeds,
)
from longred_bench.reports.short_avg import short_categories
from longred_bench.reports.table2_verdicts import LONG, LONG_SHORT, verdict_long_short
from longred_bench.reports.verdict_rules import at_paper_setting
from longred_bench.reports.verdict_stats import LEVEL, RunScores, compared_means, seed_diff
from longred_bench.reports.verdicts import (
    Verdict,
    extension_scope,
    extension_setting,
    fmt_interval,
    longred_ran,
    verdicts_markdown,
)

SHORT_AVG = "Short Avg"


@dataclass(frozen=True)
class TaskDiff:
    """``long-short-cpt - cpt`` on one short task (or Short Avg) at one extension."""

    extension: str
    task: str  # a task name, or SHORT_AVG
    long: float | None
    long_short: float | None
    ci: Interval | None
    n: int


def _only(run: RunScores, category: str, task: str) -> RunScores:
    """``run`` with its short scores cut to one task (its Short Avg is then that task's)."""
    docs = run.short.get(category, {}).get(task, {})
    return replace(run, short={category: {task: docs}} if docs else {}, short_avg=None)


def task_diffs(runs: dict[RunKey, Run], cats: dict[str, tuple[str, ...]]) -> list[TaskDiff]:
    """Per extension: Short Avg and every short task, ``long-short-cpt`` against ``cpt``."""
    out: list[TaskDiff] = []
    for ext in extensions(runs):
        long = [run_scores(k, runs[k], cats) for k in seeds(runs, ext, LONG)]
        mixed = [run_scores(k, runs[k], cats) for k in seeds(runs, ext, LONG_SHORT)]
        if not long or not mixed:
            continue
        pairs = [(SHORT_AVG, long, mixed)]
        for cat, tasks in cats.items():
            for task in tasks:
                pairs.append((task, [_only(r, cat, task) for r in long],
                              [_only(r, cat, task) for r in mixed]))  # fmt: skip
        for task, a, b in pairs:
            ci, n = seed_diff(a, b, "short")
            base, mine = compared_means(a, b, "short")
            out.append(TaskDiff(ext, task, base, mine, ci, n))
    return out


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}"


def diff_lines(diffs: list[TaskDiff]) -> list[str]:
    """The paper's Table 2 and ours, task by task."""
    paper = [f"| {name} | {long:.2f} | {short:.2f} | {short - long:+.2f} |"
             for name, long, short in TABLE2]  # fmt: skip
    lines = [
        f"Paper ({TABLE2_MARK}; {TABLE2_SETTING}):",
        "",
        "| benchmark | Long | Long+Short | difference |",
        "|---|---:|---:|---:|",
        *paper,
        "",
        "Ours (each row the mean over its seeds, on the documents all their runs scored; the "
        f"difference's {LEVEL:.0%} interval is over seeds and paired documents):",
        "",
        "| extension | task | Long (`cpt`) | Long+Short (`long-short-cpt`) | difference [95% CI] "
        "| n |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for d in diffs:
        name = f"**{SHORT_AVG}**" if d.task == SHORT_AVG else task_name(d.task)
        diff = "" if d.ci is None else fmt_interval(d.ci)
        lines.append(
            f"| `{d.extension}` | {name} | {_fmt(d.long)} | {_fmt(d.long_short)} | {diff} | {d.n} |"
        )
    return [*lines, ""]


def table2_verdicts(runs: dict[RunKey, Run], cats: dict[str, tuple[str, ...]]) -> list[Verdict]:
    """(T2) at every extension that has both rows."""
    out = []
    for ext in extensions(runs):
        long = [run_scores(k, runs[k], cats) for k in seeds(runs, ext, LONG)]
        mixed = [run_scores(k, runs[k], cats) for k in seeds(runs, ext, LONG_SHORT)]
        if long and mixed:
            pe, factor = extension_setting(ext, extension_factor(runs, ext))
            scope = extension_scope(ext, pe, factor)
            a = extension_premises(runs, cats, ext).a
            out += [] if a is None else [a]
            original = [run_scores(k, runs[k], cats) for k in baseline(runs, ext, "original")]
            t2 = verdict_long_short(long, mixed, scope, paper_setting=pe == "ABF",
                                    premises=[] if a is None else [a],
                                    original=original)  # fmt: skip
            out.append(at_paper_setting(t2, longred_ran(pe, factor)))
    return out


def plot_table2(diffs: list[TaskDiff], path: Path, title: str) -> Path:
    """Left: the paper's Long+Short - Long per benchmark; right: ours per task and Short Avg,
    one bar per extension, with intervals."""
    fig, (ax_p, ax_o) = plt.subplots(1, 2, figsize=(12, 4.5), constrained_layout=True,
                                     gridspec_kw={"width_ratios": [1, 2]})  # fmt: skip
    names = [name for name, _, _ in TABLE2]
    ax_p.bar(names, [s - lo for _, lo, s in TABLE2], color="grey")
    ax_p.set_title(f"paper {TABLE2_MARK}: Llama-3-8B 32K ABF")
    ax_p.set_ylabel("Long+Short - Long (points)")
    exts = list(dict.fromkeys(d.extension for d in diffs))
    tasks = list(dict.fromkeys(d.task for d in diffs))
    width = 0.8 / max(1, len(exts))
    for i, ext in enumerate(exts):
        xs, ys, errs = [], [], [[], []]
        for j, task in enumerate(tasks):
            d = next((x for x in diffs if x.extension == ext and x.task == task), None)
            if d is None or d.ci is None:
                continue
            xs.append(j + (i - (len(exts) - 1) / 2) * width)
            ys.append(d.ci.estimate)
            errs[0].append(d.ci.estimate - d.ci.low)
            errs[1].append(d.ci.high - d.ci.estimate)
        ax_o.bar(xs, ys, width, yerr=errs, capsize=3, label=ext)
    ax_o.set_xticks(range(len(tasks)))
    ax_o.set_xticklabels([t if t == SHORT_AVG else task_name(t) for t in tasks])
    ax_o.axhline(0, color="black", linewidth=0.8)
    ax_p.axhline(0, color="black", linewidth=0.8)
    ax_o.set_title(f"ours: long-short-cpt - cpt, {LEVEL:.0%} interval (seeds and documents)")
    if exts:
        ax_o.legend(fontsize=8)
    fig.suptitle(title)
    return save_figure(fig, path)


def build_table2(
    records: list[dict[str, Any]],
    out_dir: Path,
    *,
    profile: str,
    command: str,
    wall_seconds: float | None = None,
    wall_note: str = "",
) -> list[Path]:
    """Write ``table2.md`` and ``table2.png`` under ``out_dir``; returns their paths."""
    runs = method_runs(records, (LONG_SHORT,), "Table 2", "table2")
    cats = short_categories(records)
    out_dir.mkdir(parents=True, exist_ok=True)
    table, _ = results_table(runs, cats)
    diffs = task_diffs(runs, cats)
    lines = [
        f"# LongReD Table 2: long-only against long+short CPT data (profile `{profile}`)",
        "",
        *run_header(records, runs, command, wall_seconds, wall_note),
        "",
        "Rows: `CPT, long data` continues pre-training on the long data (D1) only; `CPT, long + "
        "original-window data` replaces half of its tokens by text of the original window, the "
        "short data of LongReD's mix (`s2l_data` of the records' configs: Brown `train` at the "
        "tiny profile, the pretraining mix's main corpus, where D1 is Austen + KJV) (LongReD's "
        "Table 2: half of the long data replaced by 8K-token text); `CPT, mixed data` "
        "is LongReD's 4 : 3 : 1 mix of Table 3 where present. Every trained row takes the same "
        f"steps and tokens per step. Short Avg and RULER as in Table 3: RULER {ruler_scope(runs)}.",
        "",
        "## Long against long+short, task by task",
        "",
        *diff_lines(diffs),
        "## Verdicts",
        "",
        *verdicts_markdown(table2_verdicts(runs, cats)),
        "The paper's benchmarks (MMLU, HumanEval, PIQA, TriviaQA) are not this profile's short "
        "tasks: compare directions and verdicts, not magnitudes.",
        "",
        "![Long+Short - Long per task](table2.png)",
        "",
        *run_sections(runs, cats, table),
    ]
    md_path = out_dir / "table2.md"
    md_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    title = f"LongReD Table 2: long-only against long+short CPT data ({profile})"
    return [md_path, plot_table2(diffs, out_dir / "table2.png", title)]
