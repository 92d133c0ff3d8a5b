"""LongReD's ablation tables (4: loss weights, 5: distilled layers, 6: short-distillation length)
at a profile: each variant of LongReD-C against the default, its claims decided.

Built from the records of ``reproduce table4`` / ``table5`` / ``table6`` (Table 3's record
schema): the original model, the zero-shot extension, ``longred-c`` (the default: a1 = 5,
a2 = 10, the attention-KL layers plus the last, Table 3's short length) and the variants
(:data:`~longred_bench.reproduce.rows.ABLATION_ROWS`). The report gives the paper's numbers,
then each variant's Short Avg and RULER (means over seeds) and its differences from a reference
row with intervals over seeds and paired documents, then the verdicts.

Every claim is a direction (:class:`Claim`), gated on Table 3's premises at the extension
(:mod:`longred_bench.reports.premises`: (a) CPT loses short-text ability and (e) CPT learns
long-context ability, both reproduced, else not comparable: an ablation of the objectives that
keep short ability, or of long learning, has nothing to detect without them). The interval of
``what(row) - what(reference)`` (``what``: Short Avg or RULER) entirely on the claimed side of 0
-> reproduced; entirely on the other side, or holding 0 and short of the paper's effect scaled
to this metric (``Claim.relative`` x the reference's score) -> not reproduced; otherwise undecided
(:func:`~longred_bench.reports.verdict_rules.judge`). Also not comparable: for a claim between
layer choices (``Claim.layers``), the two rows distilled the same layers (a choice that cannot
differ on this model's depth), a RULER claim whose two rows both score below
:data:`~longred_bench.reports.verdict_rules.RULER_FLOOR` (the floor), or there is no interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longred_bench.reports.premises import extension_premises
from longred_bench.reports.run_sections import results_table, ruler_scope, run_header, run_sections
from longred_bench.reports.runs import (
    ROW_TITLES,
    Run,
    RunKey,
    extensions,
    method_runs,
    run_scores,
    seeds,
)
from longred_bench.reports.runs_plot import plot_runs
from longred_bench.reports.short_avg import short_categories
from longred_bench.reports.verdict_rules import (
    ABOVE,
    BELOW,
    NOT_COMPARABLE,
    RULER_FLOOR,
    Verdict,
    at_paper_setting,
    below_ruler_floor,
    floor_text,
    fmt_interval,
    judge,
    premise_gate,
    verdicts_markdown,
)
from longred_bench.reports.verdict_stats import (
    LEVEL,
    RunScores,
    compared_means,
    mean_over_seeds,
    no_interval_text,
    seed_diff,
    seed_spread,
    seeds_note,
    spread_text,
)
from longred_bench.reports.verdicts import longred_ran

DEFAULT = "longred-c"
WHAT_NAMES = {"short": "Short Avg", "ruler": "RULER"}


@dataclass(frozen=True)
class Claim:
    """``what(row) - what(reference)`` has the sign ``sign`` (-1: below 0, +1: above)."""

    key: str
    text: str
    row: str
    reference: str
    what: str  # "short" or "ruler"
    sign: int
    paper: str
    layers: bool = False  # the two rows differ in their distilled layers (Table 5)
    relative: float | None = None  # the paper's relative change of ``what``, row vs reference


@dataclass(frozen=True)
class Ablation:
    """One ablation table: its rows (besides the default), the paper's lines and claims."""

    name: str
    title: str
    rows: tuple[str, ...]
    paper: tuple[str, ...]  # Markdown lines
    claims: tuple[Claim, ...]


def _layers(runs: list[RunKey], all_runs: dict[RunKey, Run]) -> set[tuple[int, ...]]:
    return {tuple(all_runs[k].train.get("layers") or ()) for k in runs if all_runs[k].train}


def verdict_direction(
    claim: Claim,
    ref: list[RunScores],
    mine: list[RunScores],
    scope: str,
    same_layers: bool = False,
    premises: Sequence[Verdict] = (),
) -> Verdict:
    """One :class:`Claim` at one extension (the rule in the module docstring), gated on
    ``premises`` (the extension's (a) and (e); none measured -> not comparable)."""
    name = WHAT_NAMES[claim.what]
    side = "below" if claim.sign < 0 else "above"
    other = "above" if claim.sign < 0 else "below"
    cases = (["two rows that distilled the same layers"] if claim.layers else []) + (
        [f"both rows' RULER below the floor of {RULER_FLOOR:g} points"]
        if claim.what == "ruler"
        else []
    )
    rule = (
        "premises (a) and (e) at this extension reproduced, else not comparable; "
        + (" or ".join(cases) + " -> not comparable; else the " if cases else "")
        + f"{LEVEL:.0%} interval over seeds and paired documents of "
        f"{name}({claim.row}) - {name}({claim.reference}): entirely {side} 0 -> reproduced; "
        f"entirely {other} 0, or holding 0 and short of the paper's effect scaled to this {name} "
        "-> not reproduced; otherwise undecided."
    )
    passed, gate = premise_gate(premises)
    if not premises:
        passed, gate = False, "premises (a) and (e) not measured here: not comparable."
    ci, n = seed_diff(ref, mine, claim.what)
    base, value = compared_means(ref, mine, claim.what)
    fmt = lambda v: "n/a" if v is None else f"{v:.2f}"  # noqa: E731
    head = (
        f"{name} `{claim.row}` {fmt(value)}{seeds_note(mine)} vs `{claim.reference}` "
        f"{fmt(base)}{seeds_note(ref)}"
    )
    if ci is None:
        ours = f"{head}; {no_interval_text(n, 'per-document')}."
        return Verdict(claim.key, claim.text, scope, claim.paper, ours, NOT_COMPARABLE, rule,
                       premise=gate)  # fmt: skip
    spreads = {
        claim.reference: seed_spread(ref, claim.what),
        claim.row: seed_spread(mine, claim.what),
    }
    effect = None if claim.relative is None or base is None else claim.relative * base
    scaled = "" if effect is None else f" The paper's effect, scaled: {effect:+.2f}."
    ours = (
        f"{head}: difference {fmt_interval(ci)} ({LEVEL:.0%} interval over seeds and paired "
        f"documents, n={n}).{scaled}{spread_text(spreads, name)}"
    )
    if not passed:
        label = NOT_COMPARABLE
    elif same_layers:
        label, rule = NOT_COMPARABLE, rule + " Applied: both rows distilled the same layers."
    elif claim.what == "ruler" and below_ruler_floor(base, value):
        label, ours = NOT_COMPARABLE, ours + floor_text(base, value)
    else:
        label = judge(ci, ABOVE if claim.sign > 0 else BELOW, paper=effect)
    return Verdict(claim.key, claim.text, scope, claim.paper, ours, label, rule, premise=gate)


def ablation_verdicts(
    ablation: Ablation, runs: dict[RunKey, Run], cats: dict[str, tuple[str, ...]]
) -> list[Verdict]:
    """Every claim of ``ablation`` at every extension that has its two rows."""
    out = []
    for ext in extensions(runs):
        pre = extension_premises(runs, cats, ext)
        scope = pre.scope
        out += pre.verdicts
        for claim in ablation.claims:
            ref_keys, my_keys = seeds(runs, ext, claim.reference), seeds(runs, ext, claim.row)
            if not ref_keys or not my_keys:
                continue
            ref = [run_scores(k, runs[k], cats) for k in ref_keys]
            mine = [run_scores(k, runs[k], cats) for k in my_keys]
            layers = _layers(ref_keys, runs), _layers(my_keys, runs)
            same = (
                claim.layers
                and len(layers[0]) == 1
                and layers[0] == layers[1]
                and () not in layers[0]
            )
            claimed = verdict_direction(claim, ref, mine, scope, same, pre.gate)
            out.append(at_paper_setting(claimed, longred_ran(pre.pe, pre.factor)))
    return out


def variant_lines(
    ablation: Ablation, runs: dict[RunKey, Run], cats: dict[str, tuple[str, ...]]
) -> list[str]:
    """Each row's settings, Short Avg and RULER (means over seeds) and differences from the
    default with intervals."""
    lines = [
        "| extension | row | distilled layers | short length | Short Avg | Short Avg - default "
        f"[{LEVEL:.0%} CI] | RULER | RULER - default [{LEVEL:.0%} CI] |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for ext in extensions(runs):
        ref_keys = seeds(runs, ext, DEFAULT)
        ref = [run_scores(k, runs[k], cats) for k in ref_keys]
        for row in (DEFAULT, *ablation.rows):
            keys = seeds(runs, ext, row)
            if not keys:
                continue
            mine = [run_scores(k, runs[k], cats) for k in keys]
            cells = []
            for what in ("short", "ruler"):
                value = mean_over_seeds(mine, f"{what}_avg")
                cells.append("" if value is None else f"{value:.1f}")
                ci = None if row == DEFAULT or not ref else seed_diff(ref, mine, what)[0]
                cells.append("" if ci is None else fmt_interval(ci))
            train = runs[keys[0]].train or {}
            layers = ", ".join(str(x) for x in train.get("layers") or [])
            short = train.get("short_len", "")
            lines.append(f"| `{ext}` | {ROW_TITLES[row]} | {layers} | {short} | "
                         + " | ".join(cells) + " |")  # fmt: skip
    return [*lines, ""]


def build_ablation(
    ablation: Ablation,
    records: list[dict[str, Any]],
    out_dir: Path,
    *,
    profile: str,
    command: str,
    wall_seconds: float | None = None,
    wall_note: str = "",
) -> list[Path]:
    """Write ``NAME.md`` and ``NAME.png`` under ``out_dir``; returns their paths."""
    runs = method_runs(records, ablation.rows, ablation.title, ablation.name)
    cats = short_categories(records)
    out_dir.mkdir(parents=True, exist_ok=True)
    table, summary = results_table(runs, cats)
    lines = [
        f"# LongReD {ablation.title} (profile `{profile}`)",
        "",
        *run_header(records, runs, command, wall_seconds, wall_note),
        "",
        "Every row is LongReD-C (Table 3's recipe and budget) with one setting changed; "
        f"`LongReD-C` is the default, Table 3's runs. Short Avg and RULER as in Table 3: RULER "
        f"{ruler_scope(runs)}.",
        "",
        *ablation.paper,
        "",
        "Ours (means over seeds; differences from the default with intervals over seeds and "
        "paired documents):",
        "",
        *variant_lines(ablation, runs, cats),
        "## Verdicts",
        "",
        *verdicts_markdown(ablation_verdicts(ablation, runs, cats)),
        "The paper's numbers are Llama-3-8B's at 32K (ABF); ours are of a 4-layer model: compare "
        "directions and verdicts, not magnitudes.",
        "",
        f"![Short Avg against RULER, and retention]({ablation.name}.png)",
        "",
        *run_sections(runs, cats, table),
    ]
    md_path = out_dir / f"{ablation.name}.md"
    md_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    title = f"LongReD {ablation.title} ({profile})"
    return [md_path, plot_runs(summary, out_dir / f"{ablation.name}.png", title)]
