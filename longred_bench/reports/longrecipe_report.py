"""LongRecipe's report: LongRecipe beside PoSE, RPES and full-length CPT, and its claims decided.

Built from the records of ``reproduce longrecipe`` (the record schema of Table 3,
:mod:`longred_bench.reports.table3`): the original model, the zero-shot extension, ``cpt``
(full-length training), ``rpes``, ``pose``, ``longrecipe`` and ``longrecipe-digit``. The tables are
Table 3's (per seed, with intervals over the scored documents), then NIAH(M) (the paper's mean of
the multi-key, multi-value and multi-query needle tasks), perplexity by position on held-out
long text (``ppl`` records, seeds averaged), the anchor types each LongRecipe run
selected its sentences by, the training cost per token against CPT's, LongRecipe's published
Table 1, and the verdicts of :mod:`longred_bench.reports.longrecipe_verdicts`. The compute claim's
interval resamples each run's optimizer steps, read from the run's ``train_steps`` record
(:func:`run_steps`); a run without one (records made before runs had one) counts with its total.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from longred_bench.metrics.stats import RunSteps
from longred_bench.reports.longrecipe_verdicts import (
    PAPER_TABLE1,
    SAME_TOKENS,
    SHORT_BASELINES,
    same_tokens,
    verdict_beats,
    verdict_compute,
    verdict_matches_full_length,
)
from longred_bench.reports.ppl_plot import plot_position_ppl
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
    extension_factor,
    extensions,
    mean_train,
    method_runs,
    row_order,
    run_scores,
    run_steps,
    seeds,
)
from longred_bench.reports.runs_plot import plot_runs
from longred_bench.reports.short_avg import short_categories
from longred_bench.reports.table10_report import loud_rows, row_cost
from longred_bench.reports.verdict_rules import Verdict
from longred_bench.reports.verdicts import extension_scope, extension_setting, verdicts_markdown

LONGRECIPE_ROWS = ("longrecipe", "longrecipe-digit")
TRAINED = ("cpt", "rpes", "pose", *LONGRECIPE_ROWS)
# NIAH(M) of LongRecipe's Table 1: RULER's multi-key, multi-value and multi-query needle tasks.
NIAH_M = ("niah_multikey_1", "niah_multikey_2", "niah_multikey_3", "niah_multivalue",
          "niah_multiquery")  # fmt: skip


def niah_m(run: Run) -> float | None:
    """Mean over the NIAH(M) tasks the run was scored on (each task's score over all its
    lengths); ``None`` without any."""
    values = [v for (task, length), v in run.ruler_tasks.items()
              if length is None and task_name(task).removeprefix("ruler_") in NIAH_M]  # fmt: skip
    return sum(values) / len(values) if values else None


def niah_lines(runs: dict[RunKey, Run]) -> list[str]:
    """NIAH(M) of every run, beside its RULER average."""
    lines = ["| extension | row | seed | NIAH(M) | RULER |", "|---|---|---:|---:|---:|"]
    for key in row_order(runs):
        run, value = runs[key], niah_m(runs[key])
        if value is None:
            continue
        ruler = run.ruler.get(None)
        lines.append(
            f"| `{key[0] or 'original RoPE'}` | {ROW_TITLES[key[1]]} | {key[2]} | {value:.1f} | "
            f"{'' if ruler is None else f'{ruler:.1f}'} |"
        )
    if len(lines) == 2:
        return ["No NIAH(M) task among the RULER tasks scored.", ""]
    return [*lines, "", "NIAH(M): the mean of the multi-key, multi-value and multi-query needle "
            "tasks over the lengths scored (LongRecipe's Table 1 column).", ""]  # fmt: skip


def position_ppl(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Perplexity by position of every row (per extension), the NLL of each bucket averaged
    over the row's seeds: ``ppl`` records as :func:`~longred_bench.reports.ppl_plot.
    plot_position_ppl` reads them, with ``model`` the row's title and ``seeds`` their number."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in records:
        if r.get("kind") == "ppl" and r.get("row") in ROW_TITLES:
            key = (r.get("extension"), r["row"], r.get("corpus"), r.get("length"),
                   r["bucket_start"], r["bucket_end"])  # fmt: skip
            groups.setdefault(key, []).append(r)
    out = []
    for (ext, row, corpus, length, start, end), group in groups.items():
        nll = sum(float(r["nll"]) for r in group) / len(group)
        out.append({
            "kind": "ppl", "model": ROW_TITLES[row], "rope": ext, "corpus": corpus,
            "length": length, "bucket_start": start, "bucket_end": end, "nll": nll,
            "ppl": math.exp(nll), "seeds": len(group),
            "max_position_embeddings": group[0].get("max_position_embeddings"),
        })  # fmt: skip
    return out


def ppl_lines(curves: list[dict[str, Any]]) -> list[str]:
    """Perplexity by position bucket, one row per (extension, row)."""
    if not curves:
        return ["No perplexity by position in these records.", ""]
    buckets = sorted({(c["bucket_start"], c["bucket_end"]) for c in curves})
    lines = [
        "| extension | row | seeds | " + " | ".join(f"{a}-{b}" for a, b in buckets) + " |",
        "|---|---|---:|" + "---:|" * len(buckets),
    ]
    rows: dict[tuple[Any, str], dict[tuple[int, int], dict[str, Any]]] = {}
    for c in curves:
        rows.setdefault((c["rope"], c["model"]), {})[(c["bucket_start"], c["bucket_end"])] = c
    for (ext, title), cells in rows.items():
        seeds_n = max(c["seeds"] for c in cells.values())
        values = [f"{cells[b]['ppl']:.1f}" if b in cells else "" for b in buckets]
        lines.append(f"| `{ext or 'original RoPE'}` | {title} | {seeds_n} | "
                     + " | ".join(values) + " |")  # fmt: skip
    corpus = ", ".join(sorted({str(c["corpus"]) for c in curves}))
    return [*lines, "", f"Perplexity of the next token by position bucket (tokens) on {corpus}, "
            "windows of each row's longest RULER length (the original model's beyond its "
            "window); the NLL of a bucket is averaged over the row's seeds.", ""]  # fmt: skip


def anchor_lines(runs: dict[RunKey, Run]) -> list[str]:
    """The anchor types each LongRecipe run kept its sentences by, with the measured lifts."""
    lines = []
    for key in row_order(runs):
        train = runs[key].train or {}
        if key[1] not in LONGRECIPE_ROWS or "anchors" not in train:
            continue
        impact = train.get("impact")
        if impact:
            lifts = ", ".join(f"{t} {v:.2f}" for t, v in sorted(
                impact.get("lifts", {}).items(), key=lambda kv: -kv[1])[:5])  # fmt: skip
            how = (f"measured: {', '.join(impact['anchors']) or 'none'} (largest lifts of the "
                   f"logit change: {lifts})")  # fmt: skip
        elif "measured" in train["anchors"]:
            how = "measured, but the run's impact.json was not found"
        else:
            how = f"given: {', '.join(train['anchors']) or 'none'}"
        lines.append(f"- `{key[0]}` {ROW_TITLES[key[1]]}, seed {key[2]}: {how}.")
    if not lines:
        return []
    return [
        "## Sentence selection",
        "",
        "LongRecipe keeps the sentences of its long data that hold a word of an anchor type and "
        "half of the others. `LongRecipe` measures the anchor types on its own model (a brief "
        "full-length CPT run, then the word types whose tokens' logits change most); `LongRecipe, "
        "digit selection` uses the released code's shortcut (sentences with a digit).",
        "",
        *lines,
        "",
    ]


def _cost(runs: dict[RunKey, Run], ext: str, row: str) -> dict[str, float] | None:
    """Means over the seeds of ``row`` at ``ext``: steps, tokens, sample length, training seconds
    and the anchor measurement's seconds (LongRecipe's brief run; 0 for the other rows)."""
    seconds = mean_train(runs, ext, row, "seconds")
    if not seconds:
        return None
    keys = seeds(runs, ext, row)
    briefs = [float(((runs[k].train or {}).get("impact") or {}).get("brief_seconds") or 0)
              for k in keys]  # fmt: skip
    figures = {what: mean_train(runs, ext, row, what) or 0.0
               for what in ("steps", "tokens", "long_len")}  # fmt: skip
    return {**figures, "seeds": len(keys), "seconds": seconds, "brief": sum(briefs) / len(keys)}


def cost_lines(runs: dict[RunKey, Run]) -> list[str]:
    """The cost table: tokens, steps, sample length, seconds per 1M tokens, ratios to CPT per
    token and per sequence (means over seeds)."""
    lines = [
        "| extension | row | seeds | steps | tokens | sample length | s per 1M tokens | "
        "x CPT per token | x CPT per sequence |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for ext in extensions(runs):
        cpt = _cost(runs, ext, "cpt")
        for row in TRAINED:
            c = _cost(runs, ext, row)
            if c is None or not c["tokens"]:
                continue
            per_token = (c["seconds"] + c["brief"]) / c["tokens"]
            token_ratio = seq_ratio = None
            if cpt and cpt["tokens"] and cpt["long_len"] and c["long_len"]:
                token_ratio = per_token / (cpt["seconds"] / cpt["tokens"])
                seq_ratio = token_ratio * c["long_len"] / cpt["long_len"]
            lines.append(
                f"| `{ext}` | {ROW_TITLES[row]} | {c['seeds']} | {c['steps']:.0f} | "
                f"{c['tokens']:,.0f} | {c['long_len']:.0f} | {per_token * 1e6:.0f} | "
                + " | ".join("" if r is None else f"{r:.2f}" for r in (token_ratio, seq_ratio))
                + " |"
            )
    if len(lines) == 2:
        return ["No training timings in these records.", ""]
    lines += [
        "",
        _budget_sentence(runs) + " LongRecipe's replay is the last quarter of its steps, so it "
        "trains on long samples for three quarters of them: conservative for its long ability; "
        "the replay and the merge with the original may favour its short ability. Seconds are "
        "each run's own training (one "
        "torch thread per worker process; a run reused from the cache keeps the timing of the "
        "call that trained it); LongRecipe's include its anchor measurement run (a brief "
        "full-length CPT run). Per sequence = per token x the sample length over CPT's. The "
        "verdict (R4) gives this ratio for LongRecipe an interval over runs and steps.",
        "",
    ]
    return lines


def _budget_sentence(runs: dict[RunKey, Run]) -> str:
    """Whether every trained row read about the same tokens as CPT (within
    :data:`~longred_bench.reports.longrecipe_verdicts.SAME_TOKENS`), from the records."""
    found = (_over_cpt(runs, ext, row, "tokens") for ext in extensions(runs) for row in TRAINED)
    ratios = [r for r in found if r is not None]
    if all(same_tokens(r) for r in ratios):
        return (f"Every row trains on about the same number of tokens as CPT (within "
                f"{SAME_TOKENS:.0%}).")  # fmt: skip
    return (f"The rows train on different numbers of tokens ({min(ratios):.2f}x to "
            f"{max(ratios):.2f}x CPT's): (R1) is not a comparison at equal tokens.")  # fmt: skip


def _over_cpt(runs: dict[RunKey, Run], ext: str | None, row: str, what: str) -> float | None:
    """A training figure of ``row`` over CPT's at ``ext`` (means over seeds; :func:`mean_train`),
    ``None`` where either is not recorded."""
    mine, full = (mean_train(runs, ext, r, what) for r in (row, "cpt"))
    return mine / full if mine and full else None


def sample_share(runs: dict[RunKey, Run]) -> str:
    """LongRecipe's sample length as a share of the target window (CPT's rows) in words: one
    percentage where every extension's is the same, else each extension's; "samples of a share"
    where no run records both."""
    shares = {}
    for ext in sorted({k[0] for k in runs if k[0] is not None}):
        share = _over_cpt(runs, ext, "longrecipe", "long_len")
        if share is not None:
            shares[ext] = f"{share:.0%}"
    if not shares:
        return "samples of a share"
    if len(set(shares.values())) == 1:
        return f"samples of {next(iter(shares.values()))}"
    return "samples of " + ", ".join(f"{v} (`{ext}`)" for ext, v in shares.items())


def paper_lines() -> list[str]:
    """LongRecipe's published Table 1."""
    lines = [
        "| target | method | NIAH(M) | RULER | LongBench | MMLU | GSM8K | HumanEval |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for target, method, *nums in PAPER_TABLE1:
        lines.append(f"| {target} | {method} | " + " | ".join(f"{v:.1f}" for v in nums) + " |")
    return [*lines, "", "Llama-3-8B-Instruct, 8K window, LongRecipe on 30% of the target "
            "window (arXiv 2409.00509, Table 1).", ""]  # fmt: skip


def _timings(runs: dict[RunKey, Run], ext: str, row: str) -> list[RunSteps]:
    """Every run of ``row`` at ``ext`` with timings (:func:`run_steps`), LongRecipe's anchor
    measurement counted as fixed seconds."""
    out = []
    for k in seeds(runs, ext, row):
        impact = (runs[k].train or {}).get("impact") or {}
        steps = run_steps(runs[k], float(impact.get("brief_seconds") or 0.0))
        if steps is not None:
            out.append(steps)
    return out


def longrecipe_verdicts(runs: dict[RunKey, Run], cats: dict[str, tuple[str, ...]]) -> list[Verdict]:
    """(R1)-(R4) for the ``longrecipe`` row of every extension with its baselines."""
    out: list[Verdict] = []
    for ext in extensions(runs):
        pe, factor = extension_setting(ext, extension_factor(runs, ext))

        def scores(row: str, ext: str | None = ext) -> list[Any]:
            return [run_scores(k, runs[k], cats) for k in seeds(runs, ext, row)]

        mine, cpt, zero = scores("longrecipe"), scores("cpt"), scores("zero-shot")
        if not mine:
            continue
        scope = f"{extension_scope(ext, pe, factor)}, `longrecipe`"
        if cpt and zero:
            ratio = _over_cpt(runs, ext, "longrecipe", "tokens")
            out.append(verdict_matches_full_length(mine, cpt, zero, scope, ratio))
        base = {b: scores(b) for b in SHORT_BASELINES}
        if all(base.values()):
            out += [verdict_beats(mine, base, scope, "ruler"),
                    verdict_beats(mine, base, scope, "short")]  # fmt: skip
        lengths = _over_cpt(runs, ext, "longrecipe", "long_len")
        loud = loud_rows(*(row_cost(runs, ext, row) for row in ("longrecipe", "cpt")))
        out.append(verdict_compute(_timings(runs, ext, "longrecipe"), _timings(runs, ext, "cpt"),
                                   lengths, scope, loud))  # fmt: skip
    return out


def build_longrecipe(
    records: list[dict[str, Any]],
    out_dir: Path,
    *,
    profile: str,
    command: str,
    wall_seconds: float | None = None,
    wall_note: str = "",
) -> list[Path]:
    """Write ``longrecipe.md`` and ``longrecipe.png`` under ``out_dir``; returns their paths."""
    runs = method_runs(records, LONGRECIPE_ROWS, "LongRecipe", "longrecipe")
    cats = short_categories(records)
    out_dir.mkdir(parents=True, exist_ok=True)
    table, summary = results_table(runs, cats)
    costs = cost_lines(runs)
    curves = position_ppl(records)
    lines = [
        f"# LongRecipe against PoSE, RPES and full-length training (profile `{profile}`)",
        "",
        *run_header(records, runs, command, wall_seconds, wall_note, timed=True),
        "",
        "Rows: `CPT, long data` trains at the whole target window (full-length training); `RPES` "
        "and `PoSE` train on samples of the original window with position ids spread over the "
        "target window (RPES: a sorted random subset; PoSE: a head chunk, then the rest shifted "
        f"by a random skip); `LongRecipe` trains on {sample_share(runs)} of the target window, "
        "from sentence-selected text, at sentence-gap position ids, replays original-window "
        "text for the last quarter of its steps at a tenth of the learning rate, then averages its "
        "weights 50/50 with the original's. All rows: the same long data (steps and tokens in "
        "the cost table). "
        f"Short Avg and RULER as in Table 3: RULER {ruler_scope(runs)}.",
        "",
        *run_sections(runs, cats, table),
        "## NIAH(M)",
        "",
        *niah_lines(runs),
        "## Perplexity by position",
        "",
        *ppl_lines(curves),
        *(["![Perplexity by position](longrecipe_ppl.png)", ""] if curves else []),
        *anchor_lines(runs),
        "## Cost per training token",
        "",
        *costs,
        "## LongRecipe's published Table 1",
        "",
        *paper_lines(),
        "## Verdicts",
        "",
        *verdicts_markdown(longrecipe_verdicts(runs, cats)),
        "The paper's setting (Llama-3-8B-Instruct, 8K -> 80K/128K, about 240M tokens) is not "
        "this profile's: compare directions and verdicts, not magnitudes.",
        "",
        "![Short Avg against RULER, and retention](longrecipe.png)",
    ]
    md_path = out_dir / "longrecipe.md"
    md_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    title = f"LongRecipe against PoSE, RPES and full-length CPT ({profile})"
    png_path = plot_runs(summary, out_dir / "longrecipe.png", title)
    if not curves:
        return [md_path, png_path]
    ppl_title = f"Perplexity by position: LongRecipe, PoSE, RPES and CPT ({profile})"
    return [md_path, png_path, plot_position_ppl(curves, out_dir / "longrecipe_ppl.png", ppl_title)]
