"""LongReD Figure 2 at a profile: short-text retention against hidden similarity over extended
models, with the paper's claim "retention correlates positively with hidden similarity" decided
by a rule.

Built from the records of ``reproduce fig2``: per point (``series`` ``zero-shot`` or ``cpt``, one
extension) the short evaluation (Table 3's record schema) and the drift summary (mean hidden
cosine over layers, per text). A point's retention is its short score (Short Avg where the tasks
have LongReD's categories, else the mean over tasks) over the original model's, on the same
documents.

(F2) per series: Spearman's rho of (hidden similarity, retention) over the series' models, with a
{level} percentile-bootstrap interval resampling the models. Interval entirely above 0 ->
reproduced; entirely below 0 -> not reproduced; otherwise (or with fewer than 12 models, the
issue's minimum for the figure) not comparable at this scale.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from longred_bench.errors import UserError
from longred_bench.metrics.correlation import bootstrap_spearman_ci
from longred_bench.metrics.stats import Interval, bootstrap_mean_ci
from longred_bench.reports.figures import save_figure
from longred_bench.reports.run_sections import call_lines
from longred_bench.reports.runs import (
    Run,
    collect_runs,
    short_avg_cell,
)
from longred_bench.reports.short_avg import short_categories
from longred_bench.reports.verdict_stats import BOOT_SEED, LEVEL, N_BOOT
from longred_bench.reports.verdicts import (
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    REPRODUCED,
    Verdict,
    text_values,
    verdicts_markdown,
)

FIG2_MARK = "[sec]"
MIN_MODELS = 12
# The paper's examples (Figure 2 / Table 12; Llama-3-8B, 256M tokens of CPT each):
# (setting, retention, hidden similarity).
PAPER_POINTS = (("ABF 5e6 @32K", 0.960, 0.943), ("ABF 5e20", 0.872, 0.856),
                ("PI x16", 0.866, 0.862))  # fmt: skip
PAPER = (
    "15 extended Llama-3-8B models (256M tokens of CPT each); MMLU retention rises with hidden "
    "similarity, e.g. "
    + "; ".join(f"{s}: retention {r:.3f}, similarity {h:.3f}" for s, r, h in PAPER_POINTS)
    + f" ({FIG2_MARK})."
)
CLAIM = "Short-text retention correlates positively with hidden-state similarity to the original."
RULE = (
    "Spearman's rho over the series' models with a {level:.0%} percentile-bootstrap interval "
    "resampling the models ({n_boot} resamples): entirely above 0 -> reproduced; entirely below "
    "0 -> not reproduced; otherwise, or with fewer than {min_models} models, not comparable at "
    "this scale."
)
SERIES_TITLES = {"zero-shot": "zero-shot extensions", "cpt": "after long-only CPT"}


@dataclass(frozen=True)
class Point:
    """One extended model of a series."""

    series: str
    extension: str
    similarity: Interval  # mean hidden cosine over texts, with its interval over texts
    score: float
    retention: float


def _categories(records: list[dict[str, Any]], runs: dict) -> dict[str, tuple[str, ...]]:
    cats = short_categories(records)
    if cats:
        return cats
    tasks = sorted({t for run in runs.values() for t in run.short})
    return {"all": tuple(tasks)} if tasks else {}


def _similarity(summary: dict[str, Any]) -> Interval:
    values = text_values(summary, "hidden_cosine")
    if values is None:
        value = float(summary["mean_hidden_cosine"])
        return Interval(value, value, value)
    return bootstrap_mean_ci(list(values.values()), n_boot=N_BOOT, level=LEVEL, seed=BOOT_SEED)


def collect_points(
    records: list[dict[str, Any]],
) -> tuple[list[Point], float, dict[str, tuple[str, ...]]]:
    """Every point with both a drift summary and a short score, the original's score, and the
    categories (with their tasks) the score averages."""
    evals = [r for r in records if r.get("kind") in ("eval", "eval_item")]
    runs: dict[Any, Run] = collect_runs(evals)
    cats = _categories(evals, runs)
    original = next((run for key, run in runs.items() if key[1] == "original"), None)
    if original is None or not cats:
        raise UserError("the Figure 2 report needs the original model's short scores")
    base = short_avg_cell(original, cats).value
    if not base:
        raise UserError("the original model's short score is 0 or missing: no retention")
    out = []
    for r in records:
        if r.get("kind") != "drift_summary" or r.get("series") not in SERIES_TITLES:
            continue
        run = runs.get((r["extension"], r["series"], 0))
        score = None if run is None else short_avg_cell(run, cats).value
        if score is not None:
            out.append(Point(r["series"], r["extension"], _similarity(r), score, score / base))
    return out, base, cats


def spearman_label(ci: Interval, n: int) -> str:
    """(F2)'s rule on the interval of rho over ``n`` models."""
    if n < MIN_MODELS or ci.low != ci.low:  # nan: too few distinct resamples
        return NOT_COMPARABLE
    if ci.low > 0:
        return REPRODUCED
    return NOT_REPRODUCED if ci.high < 0 else NOT_COMPARABLE


def fig2_verdicts(points: list[Point]) -> list[Verdict]:
    """(F2) for each series with at least 3 models."""
    out = []
    for series, title in SERIES_TITLES.items():
        mine = [p for p in points if p.series == series]
        if len(mine) < 3:
            continue
        ci = bootstrap_spearman_ci([p.similarity.estimate for p in mine],
                                   [p.retention for p in mine], n_boot=N_BOOT, level=LEVEL,
                                   seed=BOOT_SEED)  # fmt: skip
        ours = f"rho {ci.estimate:+.2f} [{ci.low:+.2f}, {ci.high:+.2f}] over {len(mine)} models."
        if ci.estimate != ci.estimate:
            ours = f"rho undefined over {len(mine)} models: one of the two sides is constant."
        rule = RULE.format(level=LEVEL, n_boot=N_BOOT, min_models=MIN_MODELS)
        out.append(Verdict("F2", CLAIM, title, PAPER, ours, spearman_label(ci, len(mine)), rule))
    return out


def points_table(points: list[Point], base: float) -> list[str]:
    lines = [f"Original model: short score {base:.2f}.", "",
             "| series | extension | hidden similarity [95% CI over texts] | short score | "
             "retention |", "|---|---|---|---:|---:|"]  # fmt: skip
    for p in sorted(points, key=lambda p: (p.series, -p.similarity.estimate)):
        s = p.similarity
        sim = f"{s.estimate:.4f} [{s.low:.4f}, {s.high:.4f}]"
        lines.append(
            f"| {SERIES_TITLES[p.series]} | `{p.extension}` | {sim} | {p.score:.2f} | "
            f"{p.retention:.3f} |"
        )
    return [*lines, ""]


def _short_name(extension: str) -> str:
    method, _, rest = extension.partition(":")
    return f"{method.upper()} {rest.split('=')[-1]}"


def plot_fig2(points: list[Point], path: Path, title: str) -> Path:
    """A panel per series (retention against similarity, each model labelled), then the
    paper's examples."""
    series = [s for s in SERIES_TITLES if any(p.series == s for p in points)]
    fig, axes = plt.subplots(1, len(series) + 1, figsize=(5 * (len(series) + 1), 4.2),
                             constrained_layout=True, squeeze=False)  # fmt: skip
    for ax, name in zip(axes[0], series, strict=False):
        mine = [p for p in points if p.series == name]
        for p in mine:
            color = {"ABF": "C0", "PI": "C1", "YARN": "C2"}.get(_short_name(p.extension)
                                                                  .split()[0], "C3")  # fmt: skip
            s = p.similarity
            err = [[s.estimate - s.low], [s.high - s.estimate]]
            ax.errorbar(s.estimate, p.retention, xerr=err, fmt="o", color=color, markersize=5)
            ax.annotate(_short_name(p.extension), (s.estimate, p.retention), fontsize=7,
                        xytext=(3, 3), textcoords="offset points")  # fmt: skip
        ax.set_xlabel("hidden similarity to the original")
        ax.set_ylabel("short-text retention")
        ax.set_title(f"ours: {SERIES_TITLES[name]}")
    ax = axes[0][-1]
    for name, ret, sim in PAPER_POINTS:
        ax.plot(sim, ret, "ks", markersize=5)
        ax.annotate(name, (sim, ret), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("hidden similarity")
    ax.set_ylabel("MMLU retention")
    ax.set_title(f"paper's examples {FIG2_MARK}")
    fig.suptitle(title)
    return save_figure(fig, path)


def build_fig2(
    records: list[dict[str, Any]],
    out_dir: Path,
    *,
    profile: str,
    command: str,
    wall_seconds: float | None = None,
    wall_note: str = "",
) -> list[Path]:
    """Write ``fig2.md`` and ``fig2.png`` under ``out_dir``; returns their paths."""
    points, base, cats = collect_points(records)
    drift = next((r for r in records if r.get("kind") == "drift_summary"), {})
    names = {c: ", ".join(f"`{t}`" for t in members) for c, members in cats.items()}
    score = (
        f"the mean of {next(iter(names.values()))}"
        if len(names) == 1
        else "the mean over categories (" + "; ".join(f"{c}: {t}" for c, t in names.items()) + ")"
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    png = plot_fig2(
        points,
        out_dir / "fig2.png",
        f"LongReD Figure 2: retention against hidden similarity (profile {profile})",
    )
    lines = [
        f"# LongReD Figure 2: short-text retention against hidden similarity (profile `{profile}`)",
        "",
        *call_lines(records, command, wall_seconds, wall_note),
        f"- Hidden similarity: cosine between the extended and the original model's hidden "
        f"states, mean over layers and tokens, on {drift.get('num_texts')} `{drift.get('texts')}` "
        f"texts of {drift.get('seq_len')} tokens; interval over texts.",
        f"- Short score: {score}; retention = score / the original's.",
        "",
        f"Paper: {PAPER}",
        "",
        *points_table(points, base),
        "## Verdicts",
        "",
        *verdicts_markdown(fig2_verdicts(points)),
        "![retention against hidden similarity](fig2.png)",
    ]
    md = out_dir / "fig2.md"
    md.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [md, png]
