"""LongReD Table 10 at a profile: training cost per recipe from the runs' own timings, beside the
paper's GPU hours, with the ratio to long-only CPT and the paper's cost claims decided.

Built from the records of ``reproduce table10`` (Table 3's record schema): each trained run's
``train`` info (seconds and tokens of its own training). A row's cost is its seconds per training
token, the mean over its seeds of seconds over the mean of tokens (:func:`seconds_per_token`); its
ratio to ``cpt`` at the same extension has an interval over the seeds (runs) of both rows (t over
their spread) and, for a row of one run whose ``train_steps`` record holds per-step timings, its
optimizer steps (:func:`~longred_bench.metrics.stats.run_step_ratio_ci`, as LongRecipe's (R4)).
Timings are wall-clock seconds of
each run's own training on the machine that trained it: a run reused from the run cache keeps
the timing of the call that trained it, so the load of the machine at those times is part of the
spread.

Claims (the paper: Llama-3-8B on 8 x A800, 32K and 128K), in the labels of
:mod:`~longred_bench.reports.verdict_rules` (:func:`~longred_bench.reports.verdict_rules.judge`
below a bound):

(T10a) *LongReD costs no more than long-only CPT* (32K: 22.4 h against 22.4 h; 128K: 33.4 h
       against 42.8 h): the interval of cost(LongReD-C) / cost(cpt) entirely below
       ``1 + TOLERANCE`` -> reproduced; entirely above it -> not reproduced; otherwise
       undecided (the timing spread is wider than the tolerance: the runs cannot tell).
(T10b) *mixed-data CPT costs less than long-only CPT* (19.9 h and 30.4 h): the interval of
       cost(mix-cpt) / cost(cpt) entirely below 1 -> reproduced; entirely above 1 -> not
       reproduced; otherwise undecided.

No paper effect is ruled out: the paper's savings depend on its windows and hardware (the share
of attention in the cost), which ours do not share. Either claim with a row of a single run is
not comparable (the floor of two runs): one timing says nothing of its spread; so is either
claim where a run of either row was timed under an unrecorded load or a 1-minute load above
``1 + LOAD_TOLERANCE`` times its machine's CPU count (:data:`TIMING_RULE`: the timing premise,
both rows timed under known conditions that left the cores to the runs). The tolerance is there
because a call's own workers hold the load at about the CPU count and its orchestrating process
and the system add a few percent (a quiet ``--jobs 2`` call on 2 cores recorded 1.92-2.18);
other work, a test run say, adds a whole core or more.

Peak memory is each run's own ``run.json`` figure (:mod:`longred_bench.training.peak_memory`): the
CUDA allocator's peak on a GPU, the training process's peak resident set on CPU; the table shows
the largest over a row's runs and its kind. The machine's load is each run's 1-minute load
average at its start and end (:mod:`longred_bench.training.machine_load`), the highest over a
row's runs with the number of CPUs: a load above the workers' own count means other work shared
the cores while the row was timed. Runs trained before the suite recorded either show "not
recorded".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from longred_bench.metrics.stats import Interval, RunSteps, run_step_ratio_ci
from longred_bench.reports import seconds_cell
from longred_bench.reports.figures import save_figure
from longred_bench.reports.run_sections import run_header
from longred_bench.reports.runs import (
    ROW_TITLES,
    Run,
    RunKey,
    extension_factor,
    extensions,
    method_runs,
    run_steps,
    seeds,
)
from longred_bench.reports.verdict_rules import (
    BELOW,
    NOT_COMPARABLE,
    Verdict,
    judge,
)
from longred_bench.reports.verdict_stats import BOOT_SEED, LEVEL, N_BOOT, RUN_INTERVALS
from longred_bench.reports.verdicts import extension_scope, extension_setting, verdicts_markdown

COST_ROWS = ("cpt", "mix-cpt", "longred-c", "longred-u")
TOLERANCE = 0.10  # (T10a): "no more than CPT" allows 10% of timing noise
TABLE10_MARK = "[sec]"
# window -> recipe -> GPU hours of Llama-3-8B on 8 x A800 (LongReD Table 10)
TABLE10 = {
    "32K": {"cpt": 22.4, "mix-cpt": 19.9, "longred": 22.4},
    "128K": {"cpt": 42.8, "mix-cpt": 30.4, "longred": 33.4},
}
CLAIM_A = "LongReD costs no more training time per token than long-only CPT."
CLAIM_B = "CPT on mixed data costs less training time per token than long-only CPT."
RULE_A = (
    "{level:.0%} interval over the runs (seeds) of each row (t) and, for a row of one run, "
    "its optimizer steps where it recorded them, of seconds per token (LongReD-C) / (cpt): "
    "entirely below {limit:.2f} -> reproduced; entirely above -> not reproduced; otherwise "
    "undecided (the interval holds {limit:.2f}: the timings cannot tell within the {tol:.0%} "
    "tolerance). No paper effect is ruled "
    "out. A row of one run -> not comparable (no spread to judge by). {timing}"
)
RULE_B = (
    "{level:.0%} interval over the runs (seeds) of each row (t) and, for a row of one run, "
    "its optimizer steps where it recorded them, of seconds per token (mix-cpt) / (cpt): "
    "entirely below 1 -> reproduced; entirely above 1 -> not reproduced; otherwise undecided. "
    "No paper effect is ruled out (its savings depend on its windows and hardware). A row of "
    "one run -> not comparable (no spread to judge by). {timing}"
)
LOAD_TOLERANCE = 0.1
"""How far above its CPU count a run's 1-minute load may be and the run still count as timed
quietly: the orchestrating process and the system, not other work."""
TIMING_RULE = (
    "A run of either row timed under an unrecorded machine load, or under a 1-minute load "
    f"above {1 + LOAD_TOLERANCE:g}x its machine's CPU count (other work shared the cores; the "
    f"call's own workers and its orchestration hold it at about the CPU count) -> not "
    "comparable (the timing premise: every run's own load recorded and within its cores)."
)


@dataclass(frozen=True)
class Cost:
    """Training cost of one row at one extension: per run (seed) seconds and tokens."""

    extension: str
    row: str
    seconds: tuple[float, ...]
    tokens: tuple[float, ...]
    steps: tuple[float, ...]
    peaks: tuple[tuple[float, str], ...] = ()
    """``(MiB, kind)`` of the runs that recorded a peak (``peak_memory_mib``, ``_kind``)."""
    loads: tuple[tuple[float, int], ...] = ()
    """``(load, CPUs)`` of the runs that recorded the machine's load: the larger of its 1-minute
    load average at the start and the end of the run."""
    timings: tuple[RunSteps, ...] = ()
    """Each run's seconds and tokens per optimizer step (:func:`~longred_bench.reports.runs.
    run_steps`: its ``train_steps`` record, else its totals as one step); empty: the totals."""

    @property
    def timed_quietly(self) -> bool:
        """Every run recorded the machine's load, none above its machine's CPU count (with
        :data:`LOAD_TOLERANCE`)."""
        return len(self.loads) == len(self.seconds) and all(
            cpus > 0 and load <= cpus * (1 + LOAD_TOLERANCE) for load, cpus in self.loads
        )

    @property
    def per_token(self) -> float:
        """Mean seconds over mean tokens."""
        return float(np.mean(self.seconds) / np.mean(self.tokens))


def costs(runs: dict[RunKey, Run]) -> list[Cost]:
    """Every trained row's runs with recorded seconds and tokens, per extension."""
    found = (row_cost(runs, ext, row) for ext in extensions(runs) for row in COST_ROWS)
    return [c for c in found if c is not None]


def row_cost(runs: dict[RunKey, Run], ext: str, row: str) -> Cost | None:
    """The runs of ``row`` at ``ext`` with recorded seconds and tokens; ``None`` without any."""
    infos = [runs[k].train or {} for k in seeds(runs, ext, row)]
    infos = [i for i in infos if i.get("seconds") and i.get("tokens")]
    if not infos:
        return None
    return Cost(
        ext, row, tuple(float(i["seconds"]) for i in infos),
        tuple(float(i["tokens"]) for i in infos),
        tuple(float(i.get("steps") or 0) for i in infos),
        tuple((float(i["peak_memory_mib"]), str(i.get("peak_memory_kind", "")))
              for i in infos if i.get("peak_memory_mib")),
        tuple((max(float(i["load_1min_start"]), float(i["load_1min_end"])),
               int(i.get("cpus") or 0))
              for i in infos if "load_1min_start" in i and "load_1min_end" in i),
        tuple(t for t in (run_steps(runs[k]) for k in seeds(runs, ext, row)) if t is not None),
    )  # fmt: skip


def ratio_interval(mine: Cost, base: Cost) -> Interval:
    """cost(mine) / cost(base) and its interval over each row's runs and, where a run recorded
    per-step timings, its optimizer steps
    (:func:`~longred_bench.metrics.stats.run_step_ratio_ci`)."""
    return run_step_ratio_ci(_timings(base), _timings(mine), n_boot=N_BOOT, level=LEVEL,
                             seed=BOOT_SEED)  # fmt: skip


def _timings(cost: Cost) -> tuple[RunSteps, ...]:
    """A row's per-step timings, or each run's totals as one step."""
    if len(cost.timings) == len(cost.seconds):
        return cost.timings
    return tuple(RunSteps([s], [t]) for s, t in zip(cost.seconds, cost.tokens, strict=True))


def steps_note(cost: Cost) -> str:
    """``"3 runs"``, or ``"3 runs, 192 steps"`` where their per-step timings are recorded."""
    steps = sum(len(t.values) for t in _timings(cost))
    runs = f"{len(cost.seconds)} runs"
    return f"{runs}, {steps} steps" if steps > len(cost.seconds) else runs


def _find(table: list[Cost], ext: str, row: str) -> Cost | None:
    return next((c for c in table if c.extension == ext and c.row == row), None)


def peak_cell(cost: Cost) -> str:
    """The largest recorded peak of a row's runs in MiB with its kind (and how many runs
    recorded one, if not all), or "not recorded"."""
    if not cost.peaks:
        return "not recorded"
    mib, kind = max(cost.peaks)
    return f"{mib:,.0f} MiB ({kind}{_some(cost, cost.peaks)})"


def _some(cost: Cost, recorded: tuple) -> str:
    """``", 2 of 3 runs"`` where fewer of a row's runs recorded a figure than it has, else
    ``""``."""
    return (
        ""
        if len(recorded) == len(cost.seconds)
        else f", {len(recorded)} of {len(cost.seconds)} runs"
    )


def load_cell(cost: Cost) -> str:
    """The highest 1-minute load average any of a row's runs saw (at its start or end), on how
    many CPUs (and how many runs recorded one, if not all), or "not recorded"."""
    if not cost.loads:
        return "not recorded"
    load, cpus = max(cost.loads)
    return f"{load:.1f} on {cpus} CPUs{_some(cost, cost.loads)}"


def cost_table(table: list[Cost]) -> list[str]:
    lines = [
        "| extension | row | runs | steps | tokens (mean) | seconds per run | s per 1M tokens | "
        f"x CPT per token [{LEVEL:.0%} CI] | peak memory | machine load (max) |",
        "|---|---|---:|---:|---:|---|---:|---:|---|---|",
    ]
    for c in table:
        base = _find(table, c.extension, "cpt")
        ratio = "1.00" if c.row == "cpt" else ""
        if base is not None and c.row != "cpt":
            ci = ratio_interval(c, base)
            ratio = f"{ci.estimate:.2f} [{ci.low:.2f}, {ci.high:.2f}]"
        secs = ", ".join(seconds_cell(s) for s in c.seconds)
        lines.append(
            f"| `{c.extension}` | {ROW_TITLES[c.row]} | {len(c.seconds)} | "
            f"{np.mean(c.steps):.0f} | {np.mean(c.tokens):,.0f} | {secs} | "
            f"{c.per_token * 1e6:.0f} | {ratio} | {peak_cell(c)} | {load_cell(c)} |"
        )
    return [*lines, ""]


def paper_lines() -> list[str]:
    lines = [
        f"Paper ({TABLE10_MARK}; Llama-3-8B, 8 x A800, GPU hours of the whole run):",
        "",
        "| window | long CPT | mix CPT | LongReD | mix / long | LongReD / long |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for window, h in TABLE10.items():
        lines.append(
            f"| {window} | {h['cpt']} h | {h['mix-cpt']} h | {h['longred']} h | "
            f"{h['mix-cpt'] / h['cpt']:.2f} | {h['longred'] / h['cpt']:.2f} |"
        )
    return [*lines, ""]


def _paper(row: str) -> str:
    parts = [f"{w}: {h[row]} h against {h['cpt']} h ({h[row] / h['cpt']:.2f}x)"
             for w, h in TABLE10.items()]  # fmt: skip
    return f"Llama-3-8B on 8 x A800, {'; '.join(parts)} ({TABLE10_MARK})."


def cost_premise(mine: Cost, base: Cost) -> str | None:
    """Why a ratio of ``mine``'s cost over ``base``'s is not comparable, or ``None``: a row of
    one run (the interval says nothing of the timing spread) or a run not timed under a recorded
    load within its machine's cores (:data:`TIMING_RULE`)."""
    if min(len(mine.seconds), len(base.seconds)) < 2:
        return "one run, no spread"
    if not (mine.timed_quietly and base.timed_quietly):
        return "a run's machine load not recorded or above its cores"
    return None


def loud_rows(*costs: Cost | None) -> str:
    """The rows of ``costs`` whose runs fail the timing premise, with their loads
    (``"`cpt` load not recorded; ..."``), or ``""`` where every run was timed quietly."""
    return "; ".join(f"`{c.row}` load {load_cell(c)}" for c in costs
                     if c is not None and not c.timed_quietly)  # fmt: skip


def cost_label(key: str, ci: Interval, premise: str | None = None) -> str:
    """The rule of (T10a) (at most CPT's cost, within the tolerance) or (T10b) (below CPT's)
    applied to the interval of a cost ratio; not comparable where ``premise`` names a failed
    premise (:func:`cost_premise`)."""
    if premise is not None:
        return NOT_COMPARABLE
    return judge(ci, BELOW, bound=1 + TOLERANCE if key == "T10a" else 1.0)


def table10_verdicts(runs: dict[RunKey, Run], table: list[Cost]) -> list[Verdict]:
    """(T10a) and (T10b) at every extension with the rows they compare."""
    out = []
    limit = 1 + TOLERANCE
    for ext in extensions(runs):
        base = _find(table, ext, "cpt")
        if base is None:
            continue
        pe, factor = extension_setting(ext, extension_factor(runs, ext))
        scope = extension_scope(ext, pe, factor)
        for key, row, claim, rule, paper in (
            ("T10a", "longred-c", CLAIM_A, RULE_A, _paper("longred")),
            ("T10b", "mix-cpt", CLAIM_B, RULE_B, _paper("mix-cpt")),
        ):
            mine = _find(table, ext, row)
            if mine is None:
                continue
            ci = ratio_interval(mine, base)
            text = rule.format(level=LEVEL, limit=limit, tol=TOLERANCE, timing=TIMING_RULE)
            label = cost_label(key, ci, cost_premise(mine, base))
            ours = (
                f"`{row}` {mine.per_token * 1e6:.0f} s per 1M tokens ({steps_note(mine)}) "
                f"against `cpt` {base.per_token * 1e6:.0f} ({steps_note(base)}): "
                f"{ci.estimate:.2f}x [{ci.low:.2f}, {ci.high:.2f}]."
            )
            loud = loud_rows(mine, base)
            ours += f" Timing premise failed: {loud}." if loud else ""
            out.append(Verdict(key, claim, scope, paper, ours, label, text))
    return out


def plot_table10(table: list[Cost], path: Path, title: str) -> Path:
    """Left: the paper's hours relative to long CPT; right: ours, seconds per token relative to
    CPT per extension, each run a dot."""
    fig, (ax_p, ax_o) = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    names = ("cpt", "mix-cpt", "longred")
    for i, (window, h) in enumerate(TABLE10.items()):
        xs = [j + (i - 0.5) * 0.35 for j in range(len(names))]
        ax_p.bar(xs, [h[n] / h["cpt"] for n in names], 0.35, label=window)
    ax_p.set_xticks(range(len(names)), ["long CPT", "mix CPT", "LongReD"])
    ax_p.set_title(f"paper {TABLE10_MARK}: hours / long CPT's")
    ax_p.legend(fontsize=8)
    exts = list(dict.fromkeys(c.extension for c in table))
    width = 0.8 / max(1, len(exts))
    for i, ext in enumerate(exts):
        base = _find(table, ext, "cpt")
        if base is None:
            continue
        for j, row in enumerate(COST_ROWS):
            c = _find(table, ext, row)
            if c is None:
                continue
            x = j + (i - (len(exts) - 1) / 2) * width
            ax_o.bar(x, c.per_token / base.per_token, width, color=f"C{i}",
                     label=ext if j == 0 else None)  # fmt: skip
            runs = np.array(c.seconds) / np.array(c.tokens) / base.per_token
            ax_o.plot([x] * len(runs), runs, "k.", markersize=4)
    ax_o.set_xticks(range(len(COST_ROWS)), [ROW_TITLES[r] for r in COST_ROWS], fontsize=8)
    ax_o.axhline(1.0, color="black", linewidth=0.8)
    ax_o.set_title("ours: seconds per token / CPT's (dots: runs)")
    if exts:
        ax_o.legend(fontsize=8)
    fig.suptitle(title)
    return save_figure(fig, path)


def build_table10(
    records: list[dict[str, Any]],
    out_dir: Path,
    *,
    profile: str,
    command: str,
    wall_seconds: float | None = None,
    wall_note: str = "",
) -> list[Path]:
    """Write ``table10.md`` and ``table10.png`` under ``out_dir``; returns their paths."""
    runs = method_runs(records, COST_ROWS, "Table 10", "table10")
    table = costs(runs)
    out_dir.mkdir(parents=True, exist_ok=True)
    lines = [
        f"# LongReD Table 10: training cost per recipe (profile `{profile}`)",
        "",
        *(
            line
            for line in run_header(records, runs, command, wall_seconds, wall_note)
            if not line.startswith("- Intervals")
        ),
        f"- Intervals: {LEVEL:.0%}, {N_BOOT} bootstrap resamples (resampling seed {BOOT_SEED}); "
        f"{RUN_INTERVALS} (a run without per-step timings is one step).",
        "",
        "Each trained row's wall-clock training seconds per token, from the runs' own timings "
        "(Table 3's runs where both tables read one run cache: the commit and base weights above "
        "say which; every row takes the same steps and tokens per step), and "
        "its ratio to long-only CPT at the same extension, with an interval over the "
        "runs (seeds) of both rows and, where recorded, their steps. A run reused from the run "
        "cache keeps the timing of the call that trained it, so the machine's load at those "
        "times is part of the spread; `python benchmarks/bench_train.py` times recipes A/B in "
        "one process.",
        "",
        *paper_lines(),
        "Ours:",
        "",
        *cost_table(table),
        "## Verdicts",
        "",
        *verdicts_markdown(table10_verdicts(runs, table)),
        "The paper's hours are of 8B models at 32K and 128K tokens on GPUs, where attention over "
        "the long window dominates; ours are of a 4-layer model on CPU: compare ratios, not "
        "hours.",
        "",
        "![cost per token relative to CPT](table10.png)",
    ]
    md_path = out_dir / "table10.md"
    md_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    title = f"LongReD Table 10: training cost per recipe ({profile})"
    return [md_path, plot_table10(table, out_dir / "table10.png", title)]
