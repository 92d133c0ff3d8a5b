"""The sections every run-grid report shares (Table 3's layout, reused by Tables 2, 4-7, LinearARD
and LongRecipe): the results table of every run with its intervals, RULER by length, the seed
spread, the long data and budgets of the trained rows, the sample sizes, and the report's header
(command, device, commit, wall time)."""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from typing import Any

from longred_bench.metrics.retention import longred_avg
from longred_bench.reports import duration, provenance, seconds_cell
from longred_bench.reports.runs import (
    ROW_TITLES,
    Cell,
    RetentionCell,
    Run,
    RunKey,
    baseline,
    retention_cell,
    row_order,
    ruler_cell,
    run_scores,
    short_avg_cell,
    task_cell,
)
from longred_bench.reports.short_avg import PASSKEY_TASK
from longred_bench.reports.verdict_stats import (
    BOOT_SEED,
    LEVEL,
    N_BOOT,
    RUN_INTERVALS,
    SEED_INTERVALS,
    seed_spread,
)
from longred_bench.results import over_length_documents

# paper_short runs with more tasks than this (its 17): the results table shows category means and
# the tasks get a table of their own.
MAX_TASK_COLUMNS = 8


def by_category(runs: dict[RunKey, Run], cats: dict[str, tuple[str, ...]]) -> bool:
    """Whether the results table shows category means: ``paper_short`` runs of more than
    :data:`MAX_TASK_COLUMNS` tasks (other suites keep a column per task)."""
    wide = sum(len(m) for m in cats.values()) > MAX_TASK_COLUMNS
    return wide and any(r.paper_short for r in runs.values())


def _ext_text(extension: str | None) -> str:
    return "-" if extension is None else f"`{extension}`"


def _fmt(value: float | None, digits: int = 1) -> str:
    return "" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def results_table(
    runs: dict[RunKey, Run], cats: dict[str, tuple[str, ...]]
) -> tuple[list[str], dict[RunKey, dict[str, Cell | RetentionCell]]]:
    """The main table's lines and, per run, its summary (for the figure). Retention is over the
    documents the run and the original both scored, with their number ``n``."""
    per_category = by_category(runs, cats)
    tasks = [] if per_category else [(c, t) for c, members in cats.items() for t in members]
    with_ppl = any(r.ppl is not None for r in runs.values())
    header = ["extension", "row", "seed"]
    header += list(cats) if per_category else [f"{c}: {task_name(t)}" for c, t in tasks]
    header += ["Short Avg", "retention (shared docs)", "RULER", "Avg (5 Short + RULER)/6"]
    with_passkey = any(PASSKEY_TASK in r.short for r in runs.values())
    header += ["passkey (retrieval, not averaged)"] if with_passkey else []
    header += ["ppl (word, not averaged)"] if with_ppl else []
    lines = ["| " + " | ".join(header) + " |", "|---|---|---:" + "|---:" * (len(header) - 3) + "|"]
    summary: dict[RunKey, dict[str, Cell | RetentionCell]] = {}
    for key in row_order(runs):
        run = runs[key]
        short = short_avg_cell(run, cats)
        ruler = ruler_cell(run, None)
        base_keys = baseline(runs, key[0], "original")
        ratio = RetentionCell(None)
        if key[1] != "original" and base_keys:
            ratio = retention_cell(run, runs[base_keys[0]], cats)
        avg = None
        if short.value is not None and ruler.value is not None:
            avg = longred_avg(short.value, ruler.value)
        summary[key] = {"short": short, "ruler": ruler, "retention": ratio}
        cells = [_ext_text(key[0]), ROW_TITLES[key[1]], str(key[2])]
        if per_category:
            cells += [short_avg_cell(run, {c: m}).text() for c, m in cats.items()]
        cells += [task_cell(run, t).text() for _, t in tasks]
        cells += [short.text(), ratio.text(), ruler.text(), _fmt(avg)]
        cells += [task_cell(run, PASSKEY_TASK).text()] if with_passkey else []
        cells += [_fmt(run.ppl, 2)] if with_ppl else []
        lines.append("| " + " | ".join(cells) + " |")
    return lines, summary


def task_table(runs: dict[RunKey, Run], cats: dict[str, tuple[str, ...]]) -> list[str]:
    """Each short task's score per run (the results table shows category means when
    :func:`by_category`); ``*`` marks the tasks LongReD names."""
    named = {t for r in runs.values() for t in r.named}
    tasks = [(c, t) for c, members in cats.items() for t in members]
    header = ["extension", "row", "seed"]
    header += [f"{c}: {task_name(t)}{'*' if t in named else ''}" for c, t in tasks]
    lines = ["| " + " | ".join(header) + " |", "|---|---|---:" + "|---:" * len(tasks) + "|"]
    for key in row_order(runs):
        cells = [_ext_text(key[0]), ROW_TITLES[key[1]], str(key[2])]
        cells += [task_cell(runs[key], t).text() for _, t in tasks]
        lines.append("| " + " | ".join(cells) + " |")
    note = " (* named by LongReD; the others complete its 17)" if named else ""
    return [f"Scores per document's task, 0-100, with 95% intervals over documents{note}.", "",
            *lines, ""]  # fmt: skip


def ruler_table(runs: dict[RunKey, Run]) -> list[str]:
    """RULER per length, one line per run that was evaluated on RULER."""
    lengths = sorted({n for r in runs.values() for n in r.ruler if n is not None})
    keys = [k for k in row_order(runs) if runs[k].ruler]
    if not keys:
        return ["No RULER results in these records.", ""]
    lines = [
        "| extension | row | seed | " + " | ".join(str(n) for n in lengths) + " | all lengths |",
        "|---|---|---:" + "|---:" * (len(lengths) + 1) + "|",
    ]
    for key in keys:
        cells = [ruler_cell(runs[key], n).text() for n in [*lengths, None]]
        lines.append(
            f"| {_ext_text(key[0])} | {ROW_TITLES[key[1]]} | {key[2]} | " + " | ".join(cells) + " |"
        )
    return [*lines, ""]


def seed_table(runs: dict[RunKey, Run], cats: dict[str, tuple[str, ...]]) -> list[str]:
    """Short Avg and RULER of every seed of the rows trained with several seeds, and their
    spreads (:func:`~longred_bench.reports.verdict_stats.seed_spread`: each seed on the
    documents all the row's seeds scored), shown beside the verdicts, whose intervals count the
    seeds' spread."""
    groups: dict[tuple[str | None, str], list[RunKey]] = defaultdict(list)
    for key in row_order(runs):
        groups[(key[0], key[1])].append(key)
    multi = {g: keys for g, keys in groups.items() if len(keys) > 1}
    if not multi:
        return ["Every row was trained with one seed: no seed spread is available.", ""]
    lines = [
        "| extension | row | seeds | Short Avg per seed | Short spread | RULER per seed "
        "| RULER spread |",
        "|---|---|---|---|---:|---|---:|",
    ]
    for (ext, row), keys in multi.items():
        scores = [run_scores(k, runs[k], cats) for k in keys]
        short = [s.short_avg for s in scores]
        ruler = [s.ruler_avg for s in scores]
        lines.append(
            f"| {_ext_text(ext)} | {ROW_TITLES[row]} | {', '.join(str(k[2]) for k in keys)} | "
            f"{', '.join(_fmt(v, 2) for v in short)} | {_fmt(seed_spread(scores), 2)} | "
            f"{', '.join(_fmt(v, 2) for v in ruler)} | {_fmt(seed_spread(scores, 'ruler'), 2)} |"
        )
    return [
        *lines,
        "",
        "Spreads are max - min over the seeds, each seed scored on the documents all the row's "
        "seeds scored. They are shown, not applied: seed variance enters the verdicts once, "
        "through the intervals over seeds and paired documents (t over the seeds' spread).",
        "",
    ]


def d1_lines(runs: dict[RunKey, Run], trained: list[RunKey]) -> list[str]:
    """What long data (D1) the trained rows used, as recorded with their runs (nothing for
    records that predate it)."""
    used = Counter(
        (t.get("long_data"), t.get("retrieval_fraction"))
        for t in (runs[k].train or {} for k in trained)
        if t.get("long_data")
    )
    if not used:
        return []

    def text(data: str, fraction: float | None) -> str:
        if "+retrieval" in data:
            return f"`{data}` ({fraction:.0%} of rows retrieval rows at the long length)"
        return f"`{data}` (prose only)"

    if len(used) == 1:
        ((data, fraction),) = used
        return [f"Long data (D1) of every trained row: {text(data, fraction)}.", ""]
    parts = "; ".join(f"{text(d, f)}: {n} runs" for (d, f), n in used.items())
    return [f"Long data (D1) differs between trained rows: {parts}.", ""]


TOKEN_TOLERANCE = 0.10  # token counts leave out padding, so rows of one budget differ a little


def budget_sentence(budgets: dict[RunKey, tuple[Any, Any]]) -> str:
    """Whether every trained run used the same budget: the same steps, and token counts (which
    leave out padding, so they vary with the data's row lengths) within :data:`TOKEN_TOLERANCE`
    of the median over the runs of the most common step count."""
    steps, _ = Counter(b[0] for b in budgets.values()).most_common(1)[0]
    tokens = sorted(b[1] for b in budgets.values() if b[0] == steps and b[1] is not None)
    mid = round(statistics.median(tokens)) if tokens else None

    def same(budget: tuple[Any, Any]) -> bool:
        if budget[0] != steps:
            return False
        return mid is None or (
            budget[1] is not None and abs(budget[1] - mid) <= TOKEN_TOLERANCE * mid
        )

    odd = [k for k, b in budgets.items() if not same(b)]
    if not odd and tokens and tokens[0] == tokens[-1]:
        return f"Every trained row used the same budget: {steps} steps and {mid} tokens."
    if not odd:
        return (
            f"Every trained row used the same budget: {steps} steps and {tokens[0]}-{tokens[-1]} "
            f"tokens (counted without padding; within {TOKEN_TOLERANCE:.0%} of the median {mid})."
        )
    names = ", ".join(f"{ROW_TITLES[k[1]]} {_ext_text(k[0])} seed {k[2]}" for k in odd)
    return (
        f"**Not every trained row used the same budget**: most used {steps} steps and about "
        f"{mid} tokens; different (other steps, or tokens beyond {TOKEN_TOLERANCE:.0%}): "
        f"{names}. Compare those rows with care."
    )


def training_lines(runs: dict[RunKey, Run]) -> list[str]:
    """The training budget of each trained run, and whether every one used the same (runs of 0
    steps, merges, left out of that check)."""
    trained = [k for k in row_order(runs) if runs[k].train]
    if not trained:
        return ["No trained rows in these records.", ""]
    lines = [
        "| extension | row | seed | steps | tokens | seconds |",
        "|---|---|---:|---:|---:|---:|",
    ]
    budgets = {}
    for key in trained:
        t = runs[key].train or {}
        if t.get("steps") != 0:  # a merge trains nothing: no budget to compare
            budgets[key] = (t.get("steps"), t.get("tokens"))
        seconds = t.get("seconds")
        lines.append(
            f"| {_ext_text(key[0])} | {ROW_TITLES[key[1]]} | {key[2]} | {t.get('steps')} | "
            f"{t.get('tokens')} | {seconds_cell(seconds) if seconds is not None else ''} |"
        )
    lines.append("")
    lines += d1_lines(runs, trained)
    if budgets:
        lines.append(budget_sentence(budgets))
    if len(budgets) < len(trained):
        lines.append("Rows of 0 steps (merges) train nothing: they are left out of that check.")
    return [*lines, ""]


def task_name(task: str) -> str:
    """A task's name in the tables: without the ``longred_`` (and ``tiny_``) prefix."""
    return task.removeprefix("longred_").removeprefix("tiny_")


def _span(values: list[int]) -> str:
    return str(values[0]) if min(values) == max(values) else f"{min(values)}-{max(values)}"


def _plural(values: list[int]) -> str:
    """``s`` unless every value of ``values`` is 1 (``RULER 1 sample``, not ``1 samples``)."""
    return "" if set(values) == {1} else "s"


def sample_sizes(runs: dict[RunKey, Run], records: list[dict[str, Any]]) -> str:
    """One sentence on the documents scored per run (``records``: those the runs came from)."""
    short = [n for r in runs.values() for n in r.short_n.values()]
    parts = []
    if short:
        parts.append(f"short tasks {_span(short)} document{_plural(short)} each")
    per_length = [
        len(docs) for r in runs.values() for per in r.ruler_items.values() for docs in per.values()
    ]
    if per_length:
        parts.append(f"RULER {_span(per_length)} sample{_plural(per_length)} per task and length")
    over = over_length_documents(records)
    parts.append(f"{over} short document(s) skipped as over-length in all")
    return "Per run: " + "; ".join(parts) + "."


def ruler_scope(runs: dict[RunKey, Run]) -> str:
    """What the RULER column averages: its tasks, at each extension's lengths."""
    tasks = sorted({task_name(t).removeprefix("ruler_") for r in runs.values()
                    for t, _ in r.ruler_tasks})  # fmt: skip
    if not tasks:
        return "the task average over the lengths evaluated"
    return (
        f"the mean over its {len(tasks)} tasks ({', '.join(tasks)}) at the lengths each row was "
        "scored at (an extension's rows at the lengths within its window; see RULER by length: "
        "RULER and Avg compare within an extension's rows, not across extensions)"
    )


def run_sections(
    runs: dict[RunKey, Run], cats: dict[str, tuple[str, ...]], table: list[str]
) -> list[str]:
    """The sections every run table report has: the results ``table``, RULER by length, the
    seeds and the training budget."""
    tasks = ["## Short tasks", "", *task_table(runs, cats)] if by_category(runs, cats) else []
    return [
        "## Results",
        "",
        *table,
        "",
        *tasks,
        "## RULER by length",
        "",
        *ruler_table(runs),
        "## Seeds",
        "",
        *seed_table(runs, cats),
        "## Training budget",
        "",
        *training_lines(runs),
    ]


def call_lines(
    records: list[dict[str, Any]], command: str, wall_seconds: float | None, wall_note: str
) -> list[str]:
    """The report lines naming the call: command and wall time (``wall_note``: how it was
    taken), device and commit of the records."""
    device, commit = provenance(records)
    return [
        f"- Command: `{command}`; wall time {duration(wall_seconds)}"
        + (f" ({wall_note})." if wall_note else "."),
        f"- Device: {device}; commit {commit}.",
    ]


def base_model_lines(records: list[dict[str, Any]]) -> list[str]:
    """``- Base model: ...``, the model the records' ``original`` row evaluated (the profile's
    model, which every row starts from); none where no record has that row."""
    from longred_bench.reports import model_named

    found = (
        r.get("model") for r in records if r.get("kind") == "eval" and r.get("row") == "original"
    )
    model = next((m for m in found if m), None)
    return [f"- Base model: {model_named(str(model))}."] if model else []


def run_header(
    records: list[dict[str, Any]],
    runs: dict[RunKey, Run],
    command: str,
    wall_seconds: float | None,
    wall_note: str,
    timed: bool = False,
    named: bool = False,
) -> list[str]:
    """The bullet lines every run table report opens with: the base model (unless the report
    has ``named`` it), command and wall time, device and commit, how intervals are made
    (``timed``: the intervals of training-time ratios too), and the sample sizes."""
    return [
        *([] if named else base_model_lines(records)),
        *call_lines(records, command, wall_seconds, wall_note),
        f"- Intervals: {LEVEL:.0%} percentile bootstrap over the scored documents ({N_BOOT} "
        f"resamples, resampling seed {BOOT_SEED}); `n` is the number of documents behind a cell; "
        f"{SEED_INTERVALS}" + (f"; {RUN_INTERVALS}." if timed else "."),
        f"- {sample_sizes(runs, records)}",
    ]
