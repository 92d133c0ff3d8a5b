"""LinearARD's report: its rows beside CPT and LongReD-C, cost per token, and its claims decided.

Built from the records of ``reproduce linearard`` (the same record schema as Table 3's,
:mod:`longred_bench.reports.table3`): the original model, each zero-shot extension, ``cpt`` and
``longred-c`` (the baselines), and the LinearARD rows: ``linearard`` (LoRA on q/k/v, the
baselines' token budget), ``linearard-ft`` (every weight trained), ``linearard-lite`` and
``linearard-lite-ft`` (1/64 of the baselines' tokens), each distilled into the final checkpoint
of a light CPT run (``cpt-light``: CPT at a quarter of the steps). The tables are Table 3's (per
seed, with intervals over the scored documents), then the training cost per token of each row
against CPT's at the same extension (seconds per token of the runs' own timings, mean over
seeds), and the verdicts of :mod:`longred_bench.reports.linearard_verdicts`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from longred_bench.reports.linearard_verdicts import (
    BASELINES,
    verdict_fewer_tokens,
    verdict_long,
    verdict_recovery,
)
from longred_bench.reports.run_sections import (
    results_table,
    ruler_scope,
    run_header,
    run_sections,
)
from longred_bench.reports.runs import (
    ROW_TITLES,
    Run,
    RunKey,
    extension_factor,
    extensions,
    mean_train,
    method_runs,
    run_scores,
    seconds_per_token,
    seeds,
)
from longred_bench.reports.runs_plot import plot_runs
from longred_bench.reports.short_avg import short_categories
from longred_bench.reports.table10_report import cost_premise, ratio_interval, row_cost
from longred_bench.reports.verdict_rules import Verdict, at_paper_setting
from longred_bench.reports.verdict_stats import LEVEL
from longred_bench.reports.verdicts import extension_scope, extension_setting, verdicts_markdown

LINEARARD_ROWS = ("linearard", "linearard-ft", "linearard-lite", "linearard-lite-ft")
COST_TARGET = 1.5  # LinearARD's cost per token at most this many times CPT's (the suite's target)


def linearard_ran(pe: str, factor: float) -> bool:
    """Whether LinearARD's paper ran this setting: PI by 8 (Llama-2, 4K to 32K) or by 4
    (Llama-3-8B and Mistral, in its code)."""
    return pe == "PI" and any(math.isclose(factor, f) for f in (4.0, 8.0))


def linearard_verdicts(runs: dict[RunKey, Run], cats: dict[str, tuple[str, ...]]) -> list[Verdict]:
    """(L1) and (L2) for every LinearARD row of every extension with both baselines; (L3) from
    the ``linearard-lite`` row's two."""
    out: list[Verdict] = []
    for ext in extensions(runs):
        pe, factor = extension_setting(ext, extension_factor(runs, ext))
        base = {b: [run_scores(k, runs[k], cats) for k in seeds(runs, ext, b)] for b in BASELINES}
        if not all(base.values()):
            continue
        for row in LINEARARD_ROWS:
            mine = [run_scores(k, runs[k], cats) for k in seeds(runs, ext, row)]
            if not mine:
                continue
            scope = f"{extension_scope(ext, pe, factor)}, `{row}`"
            recovery, long = verdict_recovery(mine, base, scope), verdict_long(mine, base, scope)
            found = [recovery, long]
            if row == "linearard-lite":
                found.append(verdict_fewer_tokens(recovery, long, scope, _budgets(runs, ext, row)))
            out += [at_paper_setting(v, linearard_ran(pe, factor)) for v in found]
    return out


def _budgets(runs: dict[RunKey, Run], ext: str, row: str) -> str:
    mine, cpt = mean_train(runs, ext, row, "tokens"), mean_train(runs, ext, "cpt", "tokens")
    if not mine or not cpt:
        return "training tokens not recorded"
    return (f"`{row}` distilled on {mine:,.0f} tokens, `cpt` trained on {cpt:,.0f} (1/"
            f"{cpt / mine:.0f}, distillation only: the light CPT run it starts from, a quarter "
            "of CPT's steps, is not counted, so this is not a ratio of all training "
            "tokens)")  # fmt: skip


def cost_lines(runs: dict[RunKey, Run]) -> list[str]:
    """Seconds per million training tokens of each trained row (mean over its seeds) and its
    ratio to CPT's at the same extension, with the target for ``linearard``."""
    lines = [
        "| extension | row | seeds | tokens (mean) | s per 1M tokens | x CPT per token |",
        "|---|---|---:|---:|---:|---:|",
    ]
    verdict = []
    for ext in extensions(runs):
        cpt = seconds_per_token(runs, ext, "cpt")
        for row in ("cpt", "longred-c", *LINEARARD_ROWS):
            cost = seconds_per_token(runs, ext, row)
            if cost is None:
                continue
            ratio = cost / cpt if cpt else None
            tokens = mean_train(runs, ext, row, "tokens") or 0.0
            lines.append(
                f"| `{ext}` | {ROW_TITLES[row]} | {len(seeds(runs, ext, row))} | {tokens:,.0f} | "
                f"{cost * 1e6:.0f} | {'' if ratio is None else f'{ratio:.2f}'} |"
            )
            target = cost_target(runs, ext) if row == "linearard" else None
            if target:
                verdict.append(target)
    if len(lines) == 2:
        return ["No training timings in these records.", ""]
    lines += [
        "",
        "Each run's seconds come from its own training (one torch thread per worker process; a "
        "run reused from the cache keeps the timing of the call that trained it), so ratios "
        "between calls carry the machine's load at those times. Target: LinearARD (LoRA, the "
        f"baselines' budget) at most {COST_TARGET:g}x CPT per token, judged on the {LEVEL:.0%} "
        "interval over both rows' runs (t over their spread; a row of one run, its recorded "
        "steps): "
        "met where it lies at or below the "
        "target, not met where it lies above, otherwise undecided; not comparable where a row "
        "has one run, or a run's load was not recorded or exceeded its cores as in Table 10: "
        + ("; ".join(verdict) if verdict else "no LinearARD timing")
        + ". `python benchmarks/bench_train.py` times the two A/B in one process.",
        "",
    ]
    return lines


def cost_target(runs: dict[RunKey, Run], ext: str) -> str | None:
    """``linearard``'s seconds per token over ``cpt``'s at ``ext``, its interval over both rows'
    runs (:func:`~longred_bench.reports.table10_report.ratio_interval`) and the target's word:
    met (the interval at or below :data:`COST_TARGET`), not met (above it) or undecided; not
    comparable where Table 10's premises fail
    (:func:`~longred_bench.reports.table10_report.cost_premise`)."""
    mine, base = row_cost(runs, ext, "linearard"), row_cost(runs, ext, "cpt")
    if mine is None or base is None:
        return None
    ci, premise = ratio_interval(mine, base), cost_premise(mine, base)
    if premise is not None:
        word = f"not comparable: {premise}"
    elif ci.high <= COST_TARGET:
        word = "met"
    else:
        word = "**not met**" if ci.low > COST_TARGET else "undecided"
    return f"`{ext}` {ci.estimate:.2f}x [{ci.low:.2f}, {ci.high:.2f}] ({word})"


def build_linearard(
    records: list[dict[str, Any]],
    out_dir: Path,
    *,
    profile: str,
    command: str,
    wall_seconds: float | None = None,
    wall_note: str = "",
) -> list[Path]:
    """Write ``linearard.md`` and ``linearard.png`` under ``out_dir``; returns their paths."""
    runs = method_runs(records, LINEARARD_ROWS, "LinearARD", "linearard")
    cats = short_categories(records)
    out_dir.mkdir(parents=True, exist_ok=True)
    table, summary = results_table(runs, cats)
    lines = [
        f"# LinearARD against CPT and LongReD-C (profile `{profile}`)",
        "",
        *run_header(records, runs, command, wall_seconds, wall_note, timed=True),
        "",
        "Rows: LinearARD distils the original model's Q/Q, K/K and V/V self-relations (q and k "
        "after RoPE) into its RoPE-extended copy on texts of the original window, every layer, "
        "the copy starting from a light CPT run at the same extension and seed (CPT at a quarter "
        "of the steps, as its paper distils after a lightweight CPT; those tokens are not counted "
        "in LinearARD's columns); "
        "`LinearARD` trains a LoRA of rank 8 on q, k and v with the baselines' token budget, "
        "`all weights` trains every weight, `1/64 tokens` runs a quarter of the steps with a "
        "sixteenth of the tokens per step (LinearARD's paper: 4.25M tokens against 256M, 1/60). "
        "CPT and LongReD-C are Table 3's recipes at this table's settings (Table 3's own cached "
        "runs where those settings are Table 3's, as at `tiny`; `smoke` trains them longer "
        "here). Short Avg and RULER as in "
        f"Table 3: RULER {ruler_scope(runs)}.",
        "",
        *run_sections(runs, cats, table),
        "## Cost per training token",
        "",
        *cost_lines(runs),
        "## Verdicts",
        "",
        *verdicts_markdown(linearard_verdicts(runs, cats)),
        "The paper's setting (LLaMA2-7B, 4K -> 32K by PI x8, 4.25M tokens, LongBench and "
        "short benchmarks) is not this profile's: compare directions and verdicts, not "
        "magnitudes.",
        "",
        "![Short Avg against RULER, and retention](linearard.png)",
    ]
    md_path = out_dir / "linearard.md"
    md_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    title = f"LinearARD against CPT and LongReD-C ({profile})"
    png_path = plot_runs(summary, out_dir / "linearard.png", title)
    return [md_path, png_path]
