"""LongReD Table 3: short-text ability and RULER of the extended and trained rows, with intervals.

:func:`build_table3` reads the records ``reproduce table3`` collects and writes ``table3.md`` and
``table3.png``. Records (everything else is ignored):

- ``kind="eval"``: the tidy records of ``run_eval`` (:func:`longred_bench.evaluation.harness.
  tidy_records`) for the short suite (``short_tiny`` or ``short``) and for ``ruler``;
- ``kind="eval_item"``: the per-document records of ``run_eval(..., item_scores=True)``;

each extended with ``row`` (one of :data:`longred_bench.reports.runs.ROWS`; another
name is a ``UserError``), ``extension`` (the RoPE spec string, ``None`` for the original and for
an extension-free control), ``seed`` (int) and ``train`` (``{"steps", "tokens", "seconds"}``,
``None`` for untrained rows); ``provenance`` (as written by
:func:`longred_bench.results.write_records`) gives the device and commit.

Per (extension, row, seed): each short task's headline score (``acc``, else ``exact_match``;
0-100) by category, Short Avg (mean over categories of the mean over their tasks), its retention
against the original (both Short Avgs over the documents both runs scored, with their number
``n``: :func:`~longred_bench.reports.runs.retention_cell`), RULER (the task average
over the lengths evaluated, and per length) and LongReD's ``Avg = (5 Short Avg + RULER) / 6``;
every short and RULER cell with its 95% percentile bootstrap interval over the scored documents
and their number ``n``. Point values are the tidy records'; intervals come from the item records
(whose means they are). The ``short_tiny`` suite's ``ppl`` task is a perplexity, shown on its own
and never averaged. The spread of each row trained with several seeds is tabled, then the
paper's Table 3 beside ours and the verdicts of :mod:`longred_bench.reports.verdicts` (claim (b)
against both ``cpt`` and the data-matched ``mix-cpt``); every difference a verdict reports is
over the documents all compared runs scored.

The ``original`` row without an extension is the baseline of every extension (one with an
extension is that extension's baseline instead); a ``control`` row without an extension is
compared with the CPT of every extension in the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from longred_bench.errors import UserError
from longred_bench.reports.paper import TABLE3, TABLE3_HEADLINE, TABLE3_MARK
from longred_bench.reports.premises import extension_premises
from longred_bench.reports.run_sections import (
    results_table,
    ruler_scope,
    run_header,
    run_sections,
    task_name,
)
from longred_bench.reports.runs import (
    ROW_TITLES,
    Run,
    RunKey,
    baseline,
    collect_runs,
    extensions,
    row_order,
    run_scores,
    seeds,
)
from longred_bench.reports.runs_plot import plot_runs
from longred_bench.reports.short_avg import short_categories
from longred_bench.reports.verdict_rules import at_paper_setting
from longred_bench.reports.verdict_stats import RunScores
from longred_bench.reports.verdicts import (
    B_BASELINES,
    Verdict,
    paper_evidence_b,
    paper_recovered_b,
    table3_ran,
    verdict_cpt_vs_control,
    verdict_longred_keeps_short,
    verdicts_markdown,
)


def table3_verdicts(runs: dict[RunKey, Run], cats: dict[str, tuple[str, ...]]) -> list[Verdict]:
    """Claims (a), (e), (b) and (d) for every extension whose compared rows were evaluated; (b)
    for each LongReD variant against ``cpt`` (key ``b``) and the data-matched ``mix-cpt``
    (``b'``), gated on that extension's (a) and (e)."""

    def scores(keys: list[RunKey]) -> list[RunScores]:
        return [run_scores(k, runs[k], cats) for k in keys]

    out: list[Verdict] = []
    for ext in extensions(runs):
        pre = extension_premises(runs, cats, ext)
        out += pre.verdicts
        cpt = scores(seeds(runs, ext, "cpt"))
        original = scores(baseline(runs, ext, "original"))
        for row, method in (("longred-c", "LongReD-C"), ("longred-u", "LongReD-U")):
            longred = scores(seeds(runs, ext, row))
            for base_row, (_, _, data) in B_BASELINES.items():
                base = scores(seeds(runs, ext, base_row))
                if base and longred:
                    paper = paper_evidence_b(pre.pe, pre.factor, method, data)
                    recovered = paper_recovered_b(pre.pe, pre.factor, method, data)
                    b = verdict_longred_keeps_short(
                        base, longred, pre.scope, paper, method, premises=pre.gate,
                        cpt_gain=pre.cpt_gain, recovered=recovered,
                        original=original)  # fmt: skip
                    out.append(at_paper_setting(b, table3_ran(pre.pe, pre.factor, method, "Mix")))
        control = scores(baseline(runs, ext, "control"))
        if cpt and control:
            out.append(verdict_cpt_vs_control(control, cpt, pre.scope))
    return out


# --- markdown ---------------------------------------------------------------------------------


def paper_table() -> list[str]:
    """The paper's Table 3, every row."""
    lines = [
        "| model | CW | PE | data | method | General | Code | Math | RC | Common | Short Avg "
        "| RULER | Avg |",
        "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in TABLE3:
        nums = [r.general, r.code, r.math, r.rc, r.common, r.short, r.ruler, r.avg]
        lines.append(
            f"| {r.model} | {r.window} | {r.pe or '-'} | {r.data or '-'} | {r.method} | "
            + " | ".join("-" if v is None else f"{v:.2f}" for v in nums)
            + " |"
        )
    return lines


def build_table3(
    records: list[dict[str, Any]],
    out_dir: Path,
    *,
    profile: str,
    command: str,
    wall_seconds: float | None = None,
    wall_note: str = "",
) -> list[Path]:
    """Write ``table3.md`` and ``table3.png`` under ``out_dir``; returns their paths.
    ``wall_note`` says how the wall time was taken (processes, threads, machine load)."""
    runs = collect_runs(records)
    if not runs:
        raise UserError("no eval records to build Table 3 from")
    if not any(k[1] == "original" for k in runs):
        raise UserError("Table 3 needs the `original` row (the baseline of every retention)")
    cats = short_categories(records)
    out_dir.mkdir(parents=True, exist_ok=True)
    order = row_order(runs)
    model = next((runs[k].model for k in order if k[1] == "original"), "")
    row_names = ", ".join(dict.fromkeys(ROW_TITLES[k[1]] for k in order))
    table, summary = results_table(runs, cats)
    verdicts = table3_verdicts(runs, cats)
    cat_text = "; ".join(f"{c} = {', '.join(task_name(t) for t in m)}" for c, m in cats.items())
    lines = [
        f"# LongReD Table 3: short-text ability and RULER after extension (profile `{profile}`)",
        "",
        f"- Base model: `{model}`; rows: {row_names}.",
        *run_header(records, runs, command, wall_seconds, wall_note, named=True),
        "",
        f"Scores are 0-100. Short-task categories: {cat_text}. Short Avg is the mean of the "
        "category means (LongReD's; the paper has five categories of 17 benchmarks, this suite's "
        "short tasks are what a small model can pass), retention is Short Avg over the "
        "original's, both over the documents the two runs scored (their number is `n`), RULER "
        f"{ruler_scope(runs)}, and Avg = (5 Short Avg + RULER) / 6. Perplexity and the "
        "in-window passkey (retrieval, in held-out phrasing) are reported on their own, never "
        "averaged.",
        "",
        *run_sections(runs, cats, table),
        "## Verdicts",
        "",
        *verdicts_markdown(verdicts),
        f"## Paper, Table 3 {TABLE3_MARK}",
        "",
        *paper_table(),
        "",
        f"Headline {TABLE3_MARK}: {TABLE3_HEADLINE}. The paper's scale (Llama-3-8B and "
        "Mistral-7B, about 1B training tokens, 17 benchmarks) is not this profile's: compare "
        "directions and verdicts, not magnitudes.",
        "",
        "![Short Avg against RULER, and retention](table3.png)",
    ]
    md_path = out_dir / "table3.md"
    md_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    png_path = plot_runs(summary, out_dir / "table3.png", f"LongReD Table 3 ({profile})")
    return [md_path, png_path]
