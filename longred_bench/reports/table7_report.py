"""LongReD Table 7 at a profile: LongReD-C against continual-learning baselines (model merging,
attention-only tuning) and CPT at one extension, its claims decided.

Built from the records of ``reproduce table7`` (Table 3's record schema): the original model, the
zero-shot extension, ``cpt``, ``attention-only`` (CPT with only the attention projections
trainable: the paper's PET), ``merge`` (half the ``cpt`` run's weights and half the original's,
no optimizer) and ``longred-c``. The claims are Table 3's claim (b) with these baselines
(:func:`~longred_bench.reports.verdicts.verdict_longred_keeps_short`, keys ``T7m`` and ``T7p``):
LongReD-C keeps more short-text ability than the baseline at a similar RULER score, every
interval over seeds and paired documents, gated on Table 3's premises (a) and (e) at the same
extension (shown first).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from longred_bench.reports.paper import TABLE7, TABLE7_COLUMNS, TABLE7_MARK, TABLE7_SETTING
from longred_bench.reports.premises import extension_premises
from longred_bench.reports.run_sections import results_table, ruler_scope, run_header, run_sections
from longred_bench.reports.runs import (
    Run,
    RunKey,
    extensions,
    method_runs,
    run_scores,
    seeds,
)
from longred_bench.reports.runs_plot import plot_runs
from longred_bench.reports.short_avg import short_categories
from longred_bench.reports.verdict_rules import at_paper_setting
from longred_bench.reports.verdicts import (
    T7_BASELINES,
    Verdict,
    longred_ran,
    verdict_longred_keeps_short,
    verdicts_markdown,
)

BASELINE_ROWS = tuple(T7_BASELINES)
_PAPER_NAMES = {"merge": "model merging", "attention-only": "PET (attention-only tuning)"}


def _scores(name: str) -> str:
    values = TABLE7[name]
    return ", ".join(f"{c} {v:.2f}" for c, v in zip(TABLE7_COLUMNS, values, strict=True) if v)


def paper_evidence(base_row: str) -> str:
    """The paper's Table 7 numbers of LongReD-C and the baseline, as one line."""
    name = _PAPER_NAMES[base_row]
    return (
        f"{TABLE7_SETTING}: LongReD-C {_scores('LongReD-C')}; {name} {_scores(name)} "
        f"({TABLE7_MARK})."
    )


def paper_lines() -> list[str]:
    lines = [
        f"Paper ({TABLE7_MARK}; {TABLE7_SETTING}; empty where the write-ups give no number):",
        "",
        "| method | " + " | ".join(TABLE7_COLUMNS) + " |",
        "|---|" + "---:|" * len(TABLE7_COLUMNS),
    ]
    for name, values in TABLE7.items():
        cells = " | ".join("" if v is None else f"{v:.2f}" for v in values)
        lines.append(f"| {name} | {cells} |")
    return [*lines, ""]


def table7_verdicts(runs: dict[RunKey, Run], cats: dict[str, tuple[str, ...]]) -> list[Verdict]:
    """The premises (a) and (e), then (T7m) and (T7p): LongReD-C against each baseline at every
    extension that has both, gated on the premises."""
    out = []
    for ext in extensions(runs):
        pre = extension_premises(runs, cats, ext)
        out += pre.verdicts
        longred = [run_scores(k, runs[k], cats) for k in seeds(runs, ext, "longred-c")]
        for base_row in BASELINE_ROWS:
            base = [run_scores(k, runs[k], cats) for k in seeds(runs, ext, base_row)]
            if base and longred:
                t7 = verdict_longred_keeps_short(
                    base, longred, pre.scope, paper_evidence(base_row), "LongReD-C",
                    premises=pre.gate, cpt_gain=pre.cpt_gain)  # fmt: skip
                out.append(at_paper_setting(t7, longred_ran(pre.pe, pre.factor)))
    return out


def build_table7(
    records: list[dict[str, Any]],
    out_dir: Path,
    *,
    profile: str,
    command: str,
    wall_seconds: float | None = None,
    wall_note: str = "",
) -> list[Path]:
    """Write ``table7.md`` and ``table7.png`` under ``out_dir``; returns their paths."""
    runs = method_runs(records, BASELINE_ROWS, "Table 7", "table7")
    cats = short_categories(records)
    out_dir.mkdir(parents=True, exist_ok=True)
    table, summary = results_table(runs, cats)
    lines = [
        f"# LongReD Table 7: continual-learning baselines (profile `{profile}`)",
        "",
        *run_header(records, runs, command, wall_seconds, wall_note),
        "",
        "Rows: `CPT, attention only (PET)` continues pre-training on the long data with only the "
        "attention projections (q, k, v, o) trainable; `merge` interpolates the weights of the "
        "`cpt` run of the same seed with the original's, half each, under the extended RoPE (no "
        "training, so its budget row shows 0 steps); `cpt` and `LongReD-C` are Table 3's runs. "
        f"Short Avg and RULER as in Table 3: RULER {ruler_scope(runs)}.",
        "",
        *paper_lines(),
        "## Verdicts",
        "",
        *verdicts_markdown(table7_verdicts(runs, cats)),
        "The paper's categories (General, Math, Common) are not this profile's short tasks: "
        "compare directions and verdicts, not magnitudes.",
        "",
        "![Short Avg against RULER, and retention](table7.png)",
        "",
        *run_sections(runs, cats, table),
    ]
    md_path = out_dir / "table7.md"
    md_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    title = f"LongReD Table 7: continual-learning baselines ({profile})"
    return [md_path, plot_runs(summary, out_dir / "table7.png", title)]
