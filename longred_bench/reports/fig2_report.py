"""LongReD Figure 2 at a profile: short-text retention against hidden similarity over extended
models, with the paper's claim "retention correlates positively with hidden similarity" decided
by a rule.

Built from the records of ``reproduce fig2``: per point (``series`` ``zero-shot`` or ``cpt``, one
extension) the short evaluation (Table 3's record schema) and the drift summary (mean hidden
cosine over layers, per text). A point's retention is its short score (Short Avg where the tasks
have LongReD's categories, else the mean over tasks) over the original model's, on the same
documents.

(F2) per series: Spearman's rho of (hidden similarity, retention) over the series' models, with a
95% percentile-bootstrap interval that resamples the models and, with one draw for every model
(they all scored the same documents), the documents of each short task and the drift texts
(:func:`~longred_bench.metrics.stats.model_document_bootstrap_ci`): each replicate recomputes
every drawn model's retention, the original's score included, and similarity on the drawn
documents and texts. In the labels of :mod:`~longred_bench.reports.verdict_rules`: interval
entirely above 0 -> reproduced; entirely below 0 -> not reproduced; otherwise undecided. The
paper gives no coefficient, so no effect is ruled out. Fewer than 12 models (the floor of the
figure), no per-document short scores to resample, or rho undefined (one side constant) or
defined in fewer than half of the resamples -> not comparable (the floor: no ranking to
judge). Records without per-text similarities (older runs) keep each model's mean similarity
fixed, and the verdict says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from longred_bench.errors import UserError
from longred_bench.metrics.correlation import spearman
from longred_bench.metrics.retention import common_documents
from longred_bench.metrics.stats import Interval, bootstrap_mean_ci, model_document_bootstrap_ci
from longred_bench.reports import model_named
from longred_bench.reports.figures import label_points, save_figure
from longred_bench.reports.run_sections import call_lines
from longred_bench.reports.runs import (
    Run,
    collect_runs,
    short_avg_cell,
    short_items,
)
from longred_bench.reports.short_avg import PASSKEY_TASK, short_categories
from longred_bench.reports.verdict_rules import (
    ABOVE,
    NOT_COMPARABLE,
    Verdict,
    fmt_interval,
    judge,
)
from longred_bench.reports.verdict_stats import BOOT_SEED, LEVEL, N_BOOT
from longred_bench.reports.verdicts import text_values, verdicts_markdown

Items = dict[str, dict[str, dict[int, float]]]
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
    "({n_boot} resamples) resampling the models and, one draw for every model, the documents of "
    "each short task and the drift texts (retention and similarity recomputed on them): "
    "entirely above 0 -> reproduced; entirely below 0 -> not reproduced; otherwise undecided "
    "(the paper gives no coefficient: no effect to rule out). Fewer than {min_models} models, "
    "no per-document short scores, or rho undefined (one side constant) or defined in fewer "
    "than half of the resamples -> not comparable (the floor: no ranking to judge)."
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
    texts: dict[int, float] | None = field(default=None, compare=False)  # text -> hidden cosine
    items: Items = field(default_factory=dict, compare=False)  # category -> task -> doc -> score


def _categories(records: list[dict[str, Any]], runs: dict) -> dict[str, tuple[str, ...]]:
    """The categories the short score averages (:func:`short_categories`), else one of every
    short task the runs scored but the passkey (in no category)."""
    cats = short_categories(records)
    if cats:
        return cats
    tasks = sorted({t for run in runs.values() for t in run.short} - {PASSKEY_TASK})
    return {"all": tuple(tasks)} if tasks else {}


def _similarity(summary: dict[str, Any]) -> Interval:
    values = text_values(summary, "hidden_cosine")
    if values is None:
        value = float(summary["mean_hidden_cosine"])
        return Interval(value, value, value)
    return bootstrap_mean_ci(list(values.values()), n_boot=N_BOOT, level=LEVEL, seed=BOOT_SEED)


def collect_points(
    records: list[dict[str, Any]],
) -> tuple[list[Point], float, dict[str, tuple[str, ...]], Items]:
    """Every point with both a drift summary and a short score, the original's score, the
    categories (with their tasks) the score averages, and the original's per-document scores."""
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
            out.append(Point(r["series"], r["extension"], _similarity(r), score, score / base,
                             text_values(r, "hidden_cosine"), short_items(run, cats)))  # fmt: skip
    return out, base, cats, short_items(original, cats)


def spearman_label(ci: Interval | None, n: int) -> str:
    """(F2)'s rule on the interval of rho over ``n`` models (``None``: no per-document scores)."""
    if n < MIN_MODELS or ci is None:
        return NOT_COMPARABLE
    if any(np.isnan(v) for v in ci):  # rho undefined, or too few defined resamples: the floor
        return NOT_COMPARABLE
    return judge(ci, ABOVE)


def rho_interval(points: list[Point], original: Items) -> tuple[Interval, str] | None:
    """Spearman's rho of (similarity, retention) over ``points`` and its interval resampling the
    models and, one draw for every model, the documents of each short task and the drift texts
    (:func:`~longred_bench.metrics.stats.model_document_bootstrap_ci`), with a sentence on what
    was resampled; ``None`` where the models and the original share no scored document."""
    cuts, n = common_documents(original, *(p.items for p in points))
    if n == 0:
        return None
    blocks = [(c, t) for c in sorted(cuts[0]) for t in sorted(cuts[0][c])]
    scores = []  # per task: [1 + models, documents], the original first
    for c, t in blocks:
        docs = sorted(cuts[0][c][t])
        scores.append(np.array([[cut[c][t][d] for d in docs] for cut in cuts]))
    per_text = [p.texts or {} for p in points]
    texts = sorted(set.intersection(*(set(t) for t in per_text)))
    if texts:
        sims = np.array([[t[i] for i in texts] for t in per_text])
        what = f"the {len(texts)} drift texts"
    else:
        texts = []
        sims = np.array([[p.similarity.estimate] for p in points])
        what = "the drift texts not resampled: no per-text similarities recorded"
    cats = [c for c, _ in blocks]

    def statistic(models: np.ndarray, draws: list[np.ndarray]) -> float:
        x = sims[models][:, draws[0]].mean(axis=1) if texts else sims[models, 0]
        per_cat: dict[str, list[np.ndarray]] = {}
        for cat, arr, docs in zip(cats, scores, draws[-len(blocks) :], strict=True):
            per_cat.setdefault(cat, []).append(arr[:, docs].mean(axis=1))
        short = np.mean([np.mean(m, axis=0) for m in per_cat.values()], axis=0)  # [1 + models]
        y = short[1:][models] / short[0] if short[0] != 0 else np.full(len(models), np.nan)
        if not (np.isfinite(x).all() and np.isfinite(y).all()):  # a replicate with no rank
            return float("nan")
        return spearman(x, y)

    sizes = ([len(texts)] if texts else []) + [a.shape[1] for a in scores]
    ci = model_document_bootstrap_ci(statistic, len(points), sizes, n_boot=N_BOOT, level=LEVEL,
                                     seed=BOOT_SEED)  # fmt: skip
    how = (
        f"{LEVEL:.0%} bootstrap over the models and, one draw for every model, their documents: "
        f"{n} documents of {len(blocks)} short task(s) that every model and the original scored; "
        f"{what}"
    )
    return ci, how


def fig2_verdicts(points: list[Point], original: Items) -> list[Verdict]:
    """(F2) for each series with at least 3 models; ``original``: the original model's
    per-document short scores (retention's denominator)."""
    out = []
    rule = RULE.format(level=LEVEL, n_boot=N_BOOT, min_models=MIN_MODELS)
    for series, title in SERIES_TITLES.items():
        mine = [p for p in points if p.series == series]
        if len(mine) < 3:
            continue
        found = rho_interval(mine, original)
        if found is None:
            ours = f"over {len(mine)} models: no per-document short scores to resample."
            out.append(Verdict("F2", CLAIM, title, PAPER, ours, NOT_COMPARABLE, rule))
            continue
        ci, how = found
        ours = f"rho {fmt_interval(ci)} over {len(mine)} models ({how})."
        if np.isnan(ci.estimate):
            ours = f"rho undefined over {len(mine)} models: one of the two sides is constant."
        elif np.isnan(ci.low) or np.isnan(ci.high):
            ours = (f"rho {ci.estimate:+.2f} over {len(mine)} models ({how}), undefined in more "
                    "than half of the resamples (one side constant, or the original scoring 0 "
                    "on the drawn documents): no interval.")  # fmt: skip
        if len(mine) < MIN_MODELS:
            ours += f" Fewer than {MIN_MODELS} models: below the figure's floor."
        if series == "cpt":
            ours += (" Each model is one training run (seed 0): the interval holds no "
                     "variance over training seeds.")  # fmt: skip
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
    labels: list[tuple[Any, list[tuple[float, float, str]]]] = []
    for ax, name in zip(axes[0], series, strict=False):
        mine = [p for p in points if p.series == name]
        for p in mine:
            color = {"ABF": "C0", "PI": "C1", "YARN": "C2"}.get(_short_name(p.extension)
                                                                  .split()[0], "C3")  # fmt: skip
            s = p.similarity
            err = [[s.estimate - s.low], [s.high - s.estimate]]
            ax.errorbar(s.estimate, p.retention, xerr=err, fmt="o", color=color, markersize=5)
        labels.append((ax, [(p.similarity.estimate, p.retention, _short_name(p.extension))
                            for p in mine]))  # fmt: skip
        ax.set_xlabel("hidden similarity to the original")
        ax.set_ylabel("short-text retention")
        ax.set_title(f"ours: {SERIES_TITLES[name]}")
    ax = axes[0][-1]
    for _, ret, sim in PAPER_POINTS:
        ax.plot(sim, ret, "ks", markersize=5)
    labels.append((ax, [(sim, ret, name) for name, ret, sim in PAPER_POINTS]))
    ax.set_xlabel("hidden similarity")
    ax.set_ylabel("MMLU retention")
    ax.set_title(f"paper's examples {FIG2_MARK}")
    fig.suptitle(title)
    for ax, points_of in labels:  # last: where labels overlap depends on the whole layout
        label_points(ax, points_of)
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
    points, base, cats, original = collect_points(records)
    drift = next((r for r in records if r.get("kind") == "drift_summary"), {})
    original_model = drift.get("original")
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
        *([f"- Original model: {model_named(original_model)}."] if original_model else []),
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
        *verdicts_markdown(fig2_verdicts(points, original)),
        "![retention against hidden similarity](fig2.png)",
    ]
    md = out_dir / "fig2.md"
    md.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [md, png]
