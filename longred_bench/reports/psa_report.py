"""The PSA report: salience S(L), gold rank and probability by length, and the PSA verdict.

Reads the ``psa_sample`` records of :func:`longred_bench.jobs.psa.run_psa` (one per sample and line)
and writes ``psa.md`` (tables + verdict lines) and ``psa.png`` (S(L), mean gold rank and mean
gold probability against length, one line per model or extension).

Two saliences, both means over samples with a percentile-bootstrap interval
(:func:`longred_bench.metrics.stats.bootstrap_mean_ci`, resampling samples):

- ``S first`` (the headline, as PSA's reference setup): the reciprocal rank of the gold step, the
  first answer token that is not punctuation or white space;
- ``S all``: each sample's mean reciprocal rank over all its answer tokens.

The verdict on PSA's observation ("the gold token stays highly ranked while its salience
falls"), per line, pooling the tasks' samples at each length:

- *salience falls*: the :data:`LEVEL` interval of ``S first(longest) - S first(shortest)``
  (the two lengths' samples resampled independently,
  :func:`longred_bench.metrics.stats.bootstrap_diff_ci`) lies entirely below 0
  (:func:`~longred_bench.reports.verdict_rules.judge`); *rises*: entirely above 0;
- *stays highly ranked*: at every length the interval of the top-``top_k`` share (the share of
  samples whose gold-step rank is at most ``top_k``; the median rank is within the top ``top_k``
  exactly when that share is at least one half) lies entirely above 1/2; *leaves the top*: at some
  length it lies entirely below 1/2;
- in the labels of :mod:`~longred_bench.reports.verdict_rules`: falls and stays ->
  *reproduced*; rises or leaves -> *not reproduced* (naming which part failed); otherwise
  (overlapping intervals, a top-k share not clear of 1/2) *undecided*: the samples cannot tell.
  Both labels need an interval to clear its bound, so the rule is symmetric. A line measured at
  a single length has no fall to measure: *not comparable* (the floor of two lengths).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from longred_bench.errors import UserError
from longred_bench.metrics.stats import Interval, bootstrap_diff_ci, bootstrap_mean_ci
from longred_bench.reports.figures import save_figure, series_styles
from longred_bench.reports.verdict_rules import (
    BELOW,
    LABEL_RULE,
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    REPRODUCED,
    UNDECIDED,
    fmt_interval,
    judge,
)

TOP_K = 10  # "highly ranked": median gold rank within the top TOP_K tokens
LEVEL = 0.95
N_BOOT = 2000
BOOT_SEED = 0


def never_emitted(record: dict[str, Any]) -> bool:
    """Whether a PCD line's gold token lies outside PCD's plausible set (probability 0: PCD
    never emits it). Its record keeps the rank one past the set's size (the median and mean
    rank read it); S first and the top-k share count it unranked (reciprocal rank 0, in no top
    k): with a set of a few tokens that rank read as highly ranked (rank 6 of a top-5 cut in the
    top 10, S first up to 1/2)."""
    pcd = record.get("decoding") == "pcd" or str(record.get("extension", "")).endswith(" +pcd")
    return pcd and record.get("probability") == 0


def sample_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """The ``psa_sample`` records as a DataFrame (a :class:`UserError` if there are none), a
    gold token PCD never emits unranked (:func:`never_emitted`)."""
    rows = [r for r in records if r.get("kind") == "psa_sample"]
    if not rows:
        raise UserError("psa report: no psa_sample records to report")
    frame = pd.DataFrame(rows)
    frame["unranked"] = [never_emitted(r) for r in rows]
    frame.loc[frame["unranked"], "reciprocal_rank"] = 0.0
    return frame


def _ci(values: pd.Series) -> Interval:
    return bootstrap_mean_ci(values.to_list(), n_boot=N_BOOT, level=LEVEL, seed=BOOT_SEED)


def summarize(frame: pd.DataFrame, by: list[str], top_k: int = TOP_K) -> pd.DataFrame:
    """One row per group of ``by`` (e.g. extension and length) of a :func:`sample_frame`: sample
    count, both saliences with their intervals, gold-step rank (median, mean), top-k share, mean
    probability and the needle's mean depth and distance."""
    rows = []
    for key, group in frame.groupby(by, sort=False):
        first, every = _ci(group["reciprocal_rank"]), _ci(group["mean_reciprocal_rank_all"])
        share = _ci(((group["rank"] <= top_k) & ~group["unranked"]).astype(float))
        rows.append(
            {
                **dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True)),
                "n": len(group),
                "reciprocal_ranks": group["reciprocal_rank"].to_list(),
                "s_first": first.estimate,
                "s_first_low": first.low,
                "s_first_high": first.high,
                "s_all": every.estimate,
                "s_all_low": every.low,
                "s_all_high": every.high,
                "median_rank": float(group["rank"].median()),
                "mean_rank": float(group["rank"].mean()),
                "top_k": top_k,
                "top_k_share": share.estimate,
                "top_k_share_low": share.low,
                "top_k_share_high": share.high,
                "mean_probability": float(group["probability"].mean()),
                "mean_depth": float(group["needle_depth"].mean()),
                "mean_distance": float(group["needle_distance"].mean()),
                "beyond_window": int(group["beyond_window"].sum()),
            }
        )
    return pd.DataFrame(rows).sort_values(by, kind="stable").reset_index(drop=True)


@dataclass(frozen=True)
class PsaVerdict:
    """PSA's observation checked on one line (model or extension)."""

    extension: str
    label: str
    salience_falls: bool
    stays_top_k: bool  # at every length the top-k share's interval is above 1/2
    leaves_top_k: bool  # at some length it is below 1/2
    shortest: dict[str, Any]
    longest: dict[str, Any]
    worst_median_rank: float
    worst_share: dict[str, Any]  # the length with the lowest top-k share
    top_k: int
    fall: Interval | None = None  # S first(longest) - S first(shortest); None: one length

    def share_text(self) -> str:
        """The lowest top-k share with its interval and length."""
        return _share(self.worst_share)

    def sentence(self) -> str:
        """One Markdown line with the numbers behind the label."""
        s, lo = self.shortest, self.longest

        def at(row: dict[str, Any]) -> str:
            return (
                f"S({row['length']}) = {row['s_first']:.3f} "
                f"[{row['s_first_low']:.3f}, {row['s_first_high']:.3f}], n = {row['n']}"
            )

        why = []
        if self.fall is not None:
            why.append(f"S first change {fmt_interval(self.fall, 3)}")
        if s["length"] != lo["length"]:
            why.append(
                "salience falls"
                if self.salience_falls
                else "salience does not fall beyond its interval"
            )
            why.append(
                f"the gold rank stays in the top {self.top_k}"
                if self.stays_top_k
                else f"the gold rank leaves the top {self.top_k}"
                if self.leaves_top_k
                else f"top-{self.top_k} share not clear of 1/2"
            )
        reason = f" ({'; '.join(why)})" if why else " (one length only: no fall to measure)"
        return (
            f"- **{self.extension}**: {self.label}{reason}: {at(s)} vs {at(lo)}; "
            f"worst median gold rank {self.worst_median_rank:g}; lowest top-{self.top_k} share "
            f"{self.share_text()}."
        )


def _share(row: dict[str, Any]) -> str:
    return (f"{row['top_k_share']:.2f} [{row['top_k_share_low']:.2f}, "
            f"{row['top_k_share_high']:.2f}] at {row['length']}")  # fmt: skip


def psa_verdicts(by_length: pd.DataFrame, top_k: int | None = None) -> list[PsaVerdict]:
    """The verdict of every line in ``by_length`` (:func:`summarize` by extension and length,
    whose ``top_k`` the top-k shares were counted with; ``top_k``, when given, must be it)."""
    counted = int(by_length["top_k"].iloc[0])
    if top_k is not None and top_k != counted:
        raise ValueError(f"psa_verdicts: top_k {top_k} but the summary counted top-{counted}")
    top_k = counted
    verdicts = []
    for extension, rows in by_length.groupby("extension", sort=False):
        rows = rows.sort_values("length")
        shortest, longest = rows.iloc[0].to_dict(), rows.iloc[-1].to_dict()
        fall = None
        if len(rows) >= 2:
            fall = bootstrap_diff_ci(shortest["reciprocal_ranks"], longest["reciprocal_ranks"],
                                     n_boot=N_BOOT, level=LEVEL, seed=BOOT_SEED)  # fmt: skip
        change = None if fall is None else judge(fall, BELOW)
        falls, rises = change == REPRODUCED, change == NOT_REPRODUCED
        worst = float(rows["median_rank"].max())
        stays = bool((rows["top_k_share_low"] > 0.5).all())
        leaves = bool((rows["top_k_share_high"] < 0.5).any())
        lowest = rows.loc[rows["top_k_share"].idxmin()].to_dict()
        if len(rows) < 2:
            label = NOT_COMPARABLE
        elif falls and stays:
            label = REPRODUCED
        elif rises or leaves:
            label = NOT_REPRODUCED
        else:
            label = UNDECIDED
        verdicts.append(
            PsaVerdict(str(extension), label, falls, stays, leaves, shortest, longest, worst,
                       lowest, top_k, fall)
        )  # fmt: skip
    return verdicts


def probability_text(p: float) -> str:
    """A mean gold probability at 3 decimals, or in scientific notation under 0.0005, where 3
    decimals read 0.000 (a random model's 2e-5, which the plot shows)."""
    return f"{p:.3f}" if p == 0 or abs(p) >= 0.0005 else f"{p:.1e}"


def _table(summary: pd.DataFrame, keys: list[str], top_k: int) -> list[str]:
    head = [*keys, "n", "S first [95% CI]", "S all [95% CI]", "median rank", "mean rank"]
    head += [f"top-{top_k} share", "mean P(gold)", "needle depth %", "needle distance (tokens)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in summary.to_dict("records"):
        cells = [str(row[k]) for k in keys] + [
            str(row["n"]),
            f"{row['s_first']:.3f} [{row['s_first_low']:.3f}, {row['s_first_high']:.3f}]",
            f"{row['s_all']:.3f} [{row['s_all_low']:.3f}, {row['s_all_high']:.3f}]",
            f"{row['median_rank']:g}",
            f"{row['mean_rank']:.1f}",
            f"{row['top_k_share']:.2f}",
            probability_text(row["mean_probability"]),
            f"{row['mean_depth']:.0f}",
            f"{row['mean_distance']:.0f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def psa_markdown(
    records: list[dict[str, Any]],
    title: str,
    *,
    top_k: int = TOP_K,
    command: str | None = None,
    measured: str | None = None,
) -> str:
    """The Markdown report: per-length table, per-task table, verdict lines, definitions
    (``measured``: a line naming device, commit and time of the measurement)."""
    frame = sample_frame(records)
    by_length = summarize(frame, ["extension", "length"], top_k)
    by_task = summarize(frame, ["extension", "task", "length"], top_k)
    lines = [f"# {title}", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    if measured:
        lines += [measured, ""]
    lines += [
        f"Tasks: {', '.join(sorted(frame['task'].unique()))}. Ranks and probabilities are those "
        "of the gold step (the first answer token that is not punctuation or white space); "
        "`S first` is its mean reciprocal rank (the headline S(L)), `S all` the mean over "
        "samples of each sample's mean reciprocal rank over all its answer tokens. Intervals: "
        f"{LEVEL:.0%} percentile bootstrap over samples ({N_BOOT} resamples).",
        "",
        "## By length (tasks pooled)",
        "",
        *_table(by_length, ["extension", "length"], top_k),
        "",
        "## By task",
        "",
        *_table(by_task, ["extension", "task", "length"], top_k),
        "",
        "## Verdict: does the gold token stay highly ranked while its salience falls?",
        "",
        f"Rule: {psa_rule(top_k)}",
        "",
        LABEL_RULE,
        "",
    ]
    lines += [v.sentence() for v in psa_verdicts(by_length, top_k)]
    beyond = int(by_length["beyond_window"].sum())
    if beyond:
        lines += ["", f"{beyond} sample(s) are longer than their model's window."]
    if bool(frame["unranked"].any()):
        lines += ["", f"{int(frame['unranked'].sum())} `+pcd` sample(s) have a gold token "
                  "outside PCD's plausible tokens (probability 0: PCD never emits it): `S first` "
                  "and the top-k share count it unranked; the median and mean rank and `S all` "
                  "read its recorded rank, one past the plausible tokens' number."]  # fmt: skip
    return "\n".join(lines) + "\n"


def psa_rule(top_k: int) -> str:
    """The sentence of the rule :func:`psa_verdicts` applies."""
    return (
        f"**{REPRODUCED}** when the {LEVEL:.0%} bootstrap interval of S first(longest length) "
        "- S first(shortest) (the two lengths' samples resampled independently) lies entirely "
        f"below 0 (salience falls) and, at every length, the "
        f"{LEVEL:.0%} interval of the top-{top_k} share (samples whose gold rank is at most "
        f"{top_k}) lies above 1/2 (its lower end over 1/2); **{NOT_REPRODUCED}** when at some "
        "length that share's interval lies below 1/2 (its upper end under 1/2: the gold token "
        "leaves the top; an end at 1/2 exactly is clear of neither) or the interval of the S first "
        f"change lies entirely above 0; otherwise **{UNDECIDED}**. Both labels need an interval "
        f"to clear its bound. A single length: **{NOT_COMPARABLE}** (no fall to measure)."
    )


def plot_psa(by_length: pd.DataFrame, path: Path, title: str) -> Path:
    """``psa.png``: S first (with its interval), mean gold rank and mean gold probability against
    length, one line per extension."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter

    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
    panels = [
        ("s_first", "salience S(L) (first content token)"),
        ("mean_rank", "mean gold rank"),
        ("mean_probability", "mean gold probability"),
    ]
    groups = list(by_length.groupby("extension", sort=False))
    for (extension, rows), style in zip(groups, series_styles(len(groups)), strict=True):
        rows = rows.sort_values("length")
        for ax, (column, _) in zip(axes, panels, strict=True):
            ax.plot(rows["length"], rows[column], label=str(extension), **style)
            if column == "s_first":
                ax.fill_between(
                    rows["length"], rows["s_first_low"], rows["s_first_high"], alpha=0.15,
                    color=style["color"],
                )  # fmt: skip
    for ax, (column, name) in zip(axes, panels, strict=True):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("context length (tokens)")
        ax.set_title(name)
        ax.grid(alpha=0.3)
        if column == "mean_rank":  # ranks as numbers (150, 200), not as 1.5 x 10^2
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
            ax.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
    axes[0].legend(fontsize=8)
    fig.suptitle(title)
    return save_figure(fig, path, dpi=110)


def write_psa_report(
    records: list[dict[str, Any]],
    out: Path,
    title: str,
    *,
    top_k: int = TOP_K,
    command: str | None = None,
    measured: str | None = None,
) -> list[Path]:
    """Write ``psa.md`` and ``psa.png`` under ``out`` (each whole or not at all); returns their
    paths."""
    from longred_bench.cache import atomic_write_text

    md = out / "psa.md"
    atomic_write_text(md, psa_markdown(records, title, top_k=top_k, command=command,
                                       measured=measured))  # fmt: skip
    by_length = summarize(sample_frame(records), ["extension", "length"], top_k)
    return [md, plot_psa(by_length, out / "psa.png", title.replace("`", ""))]


def psa_title(models: tuple[str, ...] | list[str]) -> str:
    """The report's title: the models, in backticks."""
    return "PSA: gold-token salience of " + ", ".join(f"`{m}`" for m in models) + " by length"


def measured_line(provenance: dict[str, Any], models: tuple[str, ...] | list[str]) -> str:
    """``Device: ...; commit ... (source ...); measured ...`` from a psa's provenance, with what
    each zoo model's weights are."""
    from longred_bench.data.sources import zoo_weights
    from longred_bench.reports import SHORT_HASH, model_named

    return (
        f"Device: {provenance['device']}; commit `{provenance['git_commit']}` (source "
        f"`{provenance['source_hash'][:SHORT_HASH]}`); measured {provenance['timestamp']}."
    ) + "".join(f" Model {model_named(m)}." for m in models if zoo_weights(m))


REPORT_FILES = ("psa.md", "psa.png")


def check_top_k(top_k: int) -> None:
    """Refuse a ``--top-k`` below 1: no rank is within it."""
    if top_k < 1:
        raise UserError(f"psa: --top-k must be >= 1 (got {top_k})")


def write_psa_report_from_records(out: Path, top_k: int, command: str | None) -> list[Path]:
    """Write ``psa.md`` and ``psa.png`` from ``out/psa.jsonl``, as ``psa`` writes them after
    its records (a psa finished, or stopped between the two: the same command measures nothing
    again; ``top_k`` is the report's own); returns the files written, none where no records
    are."""
    check_top_k(top_k)
    records_file = out / "psa.jsonl"
    if not records_file.is_file() or records_file.stat().st_size == 0:
        return []
    from longred_bench.results import read_records

    records = read_records(records_file)
    prov = records[0]["provenance"]
    models = list(prov["config"]["models"])
    return write_psa_report(records, out, psa_title(models), top_k=top_k, command=command,
                            measured=measured_line(prov, models))  # fmt: skip
