"""The records of a run-grid table (Tables 2-7, 10, LinearARD, LongRecipe, Figures 2-3) grouped
into runs, and the cells of their tables with their intervals.

A *run* is one evaluated model: one (extension, row, seed) of the records a training table
collects (see :mod:`longred_bench.reports.table3` for the record schema). :func:`collect_runs`
reads the tidy ``eval`` records (point values: each short task's headline score, ``acc`` else
``exact_match``, times 100; the ``longred_ruler`` group's score per length and over all lengths)
and the ``eval_item`` records (the per-document scores behind them). The cell functions pair a
point value with its percentile-bootstrap interval over the documents
(:mod:`longred_bench.metrics.stats`) and the number of documents; without item records a cell has no
interval; the ``train_steps`` record of a run's training gives its timings per optimizer step.
:func:`retention_cell` divides a run's Short Avg by the original's over the documents
both scored (a document one of them skipped counts on neither side) and says how many.

Which short tasks count in Short Avg, in which category, is :mod:`longred_bench.reports.short_avg`
(shared with ``compare``): the passkey and the perplexity of ``short_tiny`` are never averaged.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from longred_bench.errors import UserError
from longred_bench.metrics.retention import common_documents, common_retention, mean_of_means
from longred_bench.metrics.stats import (
    Interval,
    RunSteps,
    bootstrap_mean_ci,
    bootstrap_mean_of_means_ci,
)
from longred_bench.reports.short_avg import HEADLINE, PAPER_SUITE, SHORT_SUITES, short_avg
from longred_bench.reports.verdict_stats import BOOT_SEED, LEVEL, N_BOOT, RunScores
from longred_bench.results import STEPS_KIND

ROWS = (
    "original", "zero-shot", "control", "cpt", "long-short-cpt", "mix-cpt", "attention-only",
    "merge", "longred-c", "longred-u", "linearard", "linearard-ft", "linearard-lite",
    "linearard-lite-ft", "rpes", "pose", "longrecipe", "longrecipe-digit",
    "longred-c-no-short", "longred-c-no-s2l", "longred-c-a2-100", "longred-c-a1-100",
    "longred-c-a1-2", "longred-c-uniform", "longred-c-all-layers", "longred-c-last-layer",
    "longred-c-short-eighth", "longred-c-short-quarter", "longred-c-short-full",
)  # fmt: skip
ROW_TITLES = {
    "original": "original",
    "zero-shot": "zero-shot extension",
    "control": "control (original RoPE and window, same data)",
    "cpt": "CPT, long data",
    "long-short-cpt": "CPT, long + original-window data",
    "mix-cpt": "CPT, mixed data",
    "attention-only": "CPT, attention only (PET)",
    "merge": "merge: 0.5 CPT + 0.5 original",
    "longred-c": "LongReD-C",
    "longred-u": "LongReD-U",
    "linearard": "LinearARD",
    "linearard-ft": "LinearARD, all weights",
    "linearard-lite": "LinearARD, 1/64 tokens",
    "linearard-lite-ft": "LinearARD, all weights, 1/64 tokens",
    "rpes": "RPES",
    "pose": "PoSE",
    "longrecipe": "LongRecipe",
    "longrecipe-digit": "LongRecipe, digit selection",
    "longred-c-no-short": "LongReD-C, no L_short (a1 = 0, a2 = 15)",
    "longred-c-no-s2l": "LongReD-C, no L_s2l (a2 = 0)",
    "longred-c-a2-100": "LongReD-C, a2 = 100",
    "longred-c-a1-100": "LongReD-C, a1 = 100",
    "longred-c-a1-2": "LongReD-C, a1 = 2",
    "longred-c-uniform": "LongReD-C, uniform layers + last",
    "longred-c-all-layers": "LongReD-C, all layers",
    "longred-c-last-layer": "LongReD-C, last layer only",
    "longred-c-short-eighth": "LongReD-C, short texts 1/8 of the window",
    "longred-c-short-quarter": "LongReD-C, short texts 1/4 of the window",
    "longred-c-short-full": "LongReD-C, short texts of the whole window",
}
PPL_TASK, PPL_METRIC = "longred_tiny_ppl", "word_perplexity"
RULER_GROUP = "longred_ruler"

RunKey = tuple[str | None, str, int]  # (extension, row, seed)


@dataclass
class Run:
    """What the records say about one (extension, row, seed); filled by :func:`collect_runs`."""

    model: str = ""
    short: dict[str, float] = field(default_factory=dict)  # task -> headline score, 0-100
    short_n: dict[str, int] = field(default_factory=dict)
    short_items: dict[str, dict[int, float]] = field(default_factory=dict)  # task -> doc -> score
    ruler: dict[int | None, float] = field(default_factory=dict)  # length (None: all) -> score
    ruler_tasks: dict[tuple[str, int | None], float] = field(default_factory=dict)
    ruler_items: dict[str, dict[int, dict[int, float]]] = field(default_factory=dict)
    ppl: float | None = None
    named: set[str] = field(default_factory=set)  # paper_short members LongReD names
    paper_short: bool = False  # scored by paper_short (its tables show category means)
    train: dict[str, Any] | None = None
    window: int | None = None
    step_seconds: list[float] = field(default_factory=list)  # cumulative, per optimizer step
    step_tokens: list[float] = field(default_factory=list)


def _key(record: dict[str, Any]) -> RunKey:
    row = record.get("row")
    if row not in ROWS:
        raise UserError(f"record has row {row!r}; Table 3 rows are: {', '.join(ROWS)}")
    seed = record.get("seed")
    if not isinstance(seed, int):
        raise UserError(f"record of row {row!r} has seed {seed!r}: an integer is needed")
    return record.get("extension"), row, seed


def collect_runs(records: list[dict[str, Any]]) -> dict[RunKey, Run]:
    """The records grouped by (extension, row, seed), in order of first appearance."""
    runs: dict[RunKey, Run] = {}
    headline: dict[tuple[RunKey, str], str] = {}
    paper: dict[tuple[RunKey, str], tuple[str, float]] = {}  # member -> (headline, to 0-100)
    for r in records:
        if r.get("kind") != "eval":
            continue
        key = _key(r)
        run = runs.setdefault(key, Run())
        run.model = run.model or r.get("model", "")
        run.train = r.get("train") if run.train is None else run.train
        run.window = run.window or r.get("max_position_embeddings")
        leaf = r.get("n_samples") is not None
        if r.get("suite") == PAPER_SUITE:
            _paper_score(run, r, key, paper)
        elif r.get("suite") in SHORT_SUITES and leaf:
            base = r["metric"].split(",")[0]  # without the filter
            if r["task"] == PPL_TASK and r["metric"] == PPL_METRIC:
                run.ppl = float(r["value"])
            best = headline.get((key, r["task"]), "").split(",")[0]
            if base in HEADLINE and (not best or HEADLINE.index(base) < HEADLINE.index(best)):
                headline[(key, r["task"])] = r["metric"]
                run.short[r["task"]] = 100.0 * float(r["value"])
                run.short_n[r["task"]] = int(r["n_samples"])
        elif r.get("suite") == "ruler" and r["metric"] == "score":
            if r["task"] == RULER_GROUP:
                run.ruler[r.get("length")] = float(r["value"])
            elif leaf:
                run.ruler_tasks[(r["task"], r.get("length"))] = float(r["value"])
    for r in records:
        if r.get("kind") != "eval_item":
            continue
        key = _key(r)
        run = runs.setdefault(key, Run())
        if r.get("suite") == PAPER_SUITE:
            _paper_item(run, r, key, paper)
        elif r.get("suite") in SHORT_SUITES and headline.get((key, r["task"])) == r["metric"]:
            run.short_items.setdefault(r["task"], {})[int(r["doc_id"])] = 100.0 * r["value"]
        elif r.get("suite") == "ruler" and r["metric"] == "score" and r.get("length"):
            per_task = run.ruler_items.setdefault(r["task"], {})
            per_task.setdefault(int(r["length"]), {})[int(r["doc_id"])] = float(r["value"])
    _paper_counts(records, runs, paper)
    for r in records:  # a training run's per-step timings, for a run that was scored
        if r.get("kind") == STEPS_KIND and _key(r) in runs:
            runs[_key(r)].step_seconds = [float(x) for x in r["step_seconds"]]
            runs[_key(r)].step_tokens = [float(x) for x in r["step_tokens"]]
    for run in runs.values():
        if not run.ruler and run.ruler_tasks:  # no group record: tasks weighted equally
            by_length: dict[int | None, list[float]] = defaultdict(list)
            for (_, length), value in run.ruler_tasks.items():
                by_length[length].append(value)
            run.ruler = {n: sum(v) / len(v) for n, v in by_length.items()}
    return runs


def _paper_score(run: Run, r: dict[str, Any], key: RunKey, paper: dict) -> None:
    """A ``paper_short`` member's score (its ``headline`` metric, brought to 0-100); its
    headline and scale are kept for the per-document records of the tasks under it."""
    if r.get("category") and r["metric"] == r.get("headline") and r.get("value") is not None:
        scale = 100.0 * float(r.get("headline_scale", 1.0))
        run.short[r["task"]] = scale * float(r["value"])
        run.paper_short = True
        paper[(key, r["task"])] = (r["metric"], scale)
        if r.get("source") == "paper":
            run.named.add(r["task"])


def _paper_item(run: Run, r: dict[str, Any], key: RunKey, paper: dict) -> None:
    """A document of a ``paper_short`` member: its own (``doc_id``) or, under a group member
    (MMLU, BBH, MATH), ``(task, doc_id)`` of the subtask, scored by the member's headline."""
    member = r.get("member")
    metric, scale = paper.get((key, member), (None, 0.0))
    if member is None or r["metric"] != metric:
        return
    doc = int(r["doc_id"]) if r["task"] == member else (r["task"], int(r["doc_id"]))
    run.short_items.setdefault(member, {})[doc] = scale * float(r["value"])


def _paper_counts(records: list[dict[str, Any]], runs: dict[RunKey, Run], paper: dict) -> None:
    """Documents scored per ``paper_short`` member: the counts of the leaf tasks under it (the
    member itself when it is a task; a group's record has none) of its headline metric, each
    leaf task counted once however often its record appears."""
    leaves: dict[tuple[RunKey, str], dict[str, int]] = defaultdict(dict)
    for r in records:
        member, n = r.get("member"), r.get("n_samples")
        if r.get("kind") != "eval" or r.get("suite") != PAPER_SUITE or None in (member, n):
            continue
        key = _key(r)
        if r["metric"] == paper.get((key, member), (None,))[0]:
            leaves[(key, member)][r["task"]] = int(n)
    for (key, member), counts in leaves.items():
        runs[key].short_n[member] = sum(counts.values())


@dataclass(frozen=True)
class Cell:
    """A score, its bootstrap interval (``None`` without item scores) and its document count."""

    value: float | None
    ci: Interval | None = None
    n: int | None = None

    def text(self, digits: int = 1) -> str:
        if self.value is None or math.isnan(self.value):
            return ""
        out = f"{self.value:.{digits}f}"
        if self.ci is not None:
            out += f" [{self.ci.low:.{digits}f}, {self.ci.high:.{digits}f}]"
        return out + (f" n={self.n}" if self.n is not None else "")


def _boot(**kw: Any) -> dict[str, Any]:
    return {"n_boot": N_BOOT, "level": LEVEL, "seed": BOOT_SEED, **kw}


def short_items(run: Run, cats: dict[str, tuple[str, ...]]) -> dict[str, dict[str, dict]]:
    """category -> task -> doc_id -> score, for the tasks with item scores."""
    out: dict[str, dict[str, dict]] = {}
    for cat, members in cats.items():
        present = {t: run.short_items[t] for t in members if run.short_items.get(t)}
        if present:
            out[cat] = present
    return out


def task_cell(run: Run, task: str) -> Cell:
    items = run.short_items.get(task)
    if not items:
        return Cell(run.short.get(task), None, run.short_n.get(task))
    return Cell(run.short.get(task), bootstrap_mean_ci(list(items.values()), **_boot()), len(items))


def short_avg_cell(run: Run, cats: dict[str, tuple[str, ...]]) -> Cell:
    """Short Avg (tidy values) with the interval of the mean of category means over items."""
    if not run.short:
        return Cell(None)
    value = short_avg(run.short, cats)
    value = None if math.isnan(value) else value
    items = short_items(run, cats)
    complete = sum(len(m) for m in items.values()) == sum(len(m) for m in cats.values())
    n = sum(len(d) for m in items.values() for d in m.values()) if items else None
    if not complete:
        counts = [run.short_n[t] for m in cats.values() for t in m if t in run.short_n]
        return Cell(value, None, sum(counts) or None)
    groups = {c: {t: list(d.values()) for t, d in m.items()} for c, m in items.items()}
    return Cell(value, bootstrap_mean_of_means_ci(groups, **_boot()), n)


def ruler_cell(run: Run, length: int | None) -> Cell:
    """RULER at ``length`` (``None``: over every length; tasks weighted equally)."""
    value = run.ruler.get(length)
    groups = {
        task: {n: list(docs.values()) for n, docs in per.items() if length in (None, n)}
        for task, per in run.ruler_items.items()
    }
    groups = {t: m for t, m in groups.items() if m}
    if not groups:
        return Cell(value)
    n = sum(len(v) for m in groups.values() for v in m.values())
    return Cell(value, bootstrap_mean_of_means_ci(groups, **_boot()), n)


@dataclass(frozen=True)
class RetentionCell:
    """Short Avg retention against the original over the documents both runs scored: the
    ratio, its interval (the run's Short Avg interval on those documents over the original's
    Short Avg on them, the original taken as fixed; ``None`` without item scores) and ``n``."""

    value: float | None
    ci: tuple[float, float] | None = None
    n: int | None = None

    def text(self, digits: int = 3) -> str:
        if self.value is None or math.isnan(self.value):
            return ""
        return f"{self.value:.{digits}f}" + (f" n={self.n}" if self.n is not None else "")


def retention_cell(run: Run, original: Run, cats: dict[str, tuple[str, ...]]) -> RetentionCell:
    """Short Avg of ``run`` over that of ``original``, both on the documents both scored
    (:func:`~longred_bench.metrics.retention.common_retention`). Without item scores on both
    sides, the tidy Short Avg ratio when every task was scored on as many documents on both
    sides (the suite's first ``limit`` documents), else no value: the document sets differ."""
    ext, orig = short_items(run, cats), short_items(original, cats)
    if ext and orig:
        ratio, n = common_retention(orig, ext)
        if n == 0 or math.isnan(ratio):
            return RetentionCell(None, None, n)
        (orig_cut, ext_cut), _ = common_documents(orig, ext)
        base = mean_of_means(orig_cut)
        groups = {c: {t: list(d.values()) for t, d in m.items()} for c, m in ext_cut.items()}
        ci = bootstrap_mean_of_means_ci(groups, **_boot())
        return RetentionCell(ratio, (ci.low / base, ci.high / base), n)
    value, base = short_avg_cell(run, cats).value, short_avg_cell(original, cats).value
    tasks = [t for m in cats.values() for t in m if t in run.short or t in original.short]
    counts = [(run.short_n.get(t), original.short_n.get(t)) for t in tasks]
    same = all(a is not None and a == b for a, b in counts)
    if value is None or not base or not same:
        return RetentionCell(None)
    return RetentionCell(value / base, None, sum(run.short_n[t] for t in tasks))


def run_scores(key: RunKey, run: Run, cats: dict[str, tuple[str, ...]]) -> RunScores:
    """The verdict rules' view of a run."""
    return RunScores(
        extension=key[0],
        row=key[1],
        seed=key[2],
        short_avg=short_avg_cell(run, cats).value,
        ruler_avg=run.ruler.get(None),
        short=short_items(run, cats),
        ruler=run.ruler_items,
    )


def extensions(runs: dict[RunKey, Run]) -> list[str]:
    return list(dict.fromkeys(k[0] for k in runs if k[0] is not None))


def seeds(runs: dict[RunKey, Run], extension: str | None, row: str) -> list[RunKey]:
    return sorted((k for k in runs if k[0] == extension and k[1] == row), key=lambda k: k[2])


def baseline(runs: dict[RunKey, Run], extension: str | None, row: str) -> list[RunKey]:
    """Runs of ``row`` for ``extension``, else those of ``row`` without an extension."""
    return seeds(runs, extension, row) or seeds(runs, None, row)


def extension_factor(runs: dict[RunKey, Run], extension: str) -> float | None:
    """Evaluated window of the extension's runs over the original's, where both are known."""
    orig = [runs[k].window for k in baseline(runs, extension, "original") if runs[k].window]
    ext = [
        runs[k].window for k in runs if k[0] == extension and k[1] != "control" and runs[k].window
    ]
    if not orig or not ext:
        return None
    return max(ext) / orig[0]


def row_order(runs: dict[RunKey, Run]) -> list[RunKey]:
    """Original first, then extension by extension in order of appearance, rows as in ROWS."""
    order = {ext: i for i, ext in enumerate([None, *extensions(runs)])}
    return sorted(runs, key=lambda k: (order[k[0]], ROWS.index(k[1]), k[2]))


def mean_train(runs: dict[RunKey, Run], ext: str | None, row: str, what: str) -> float | None:
    """Mean over the seeds of ``row`` at ``ext`` of a training figure (``tokens``, ``seconds``,
    ``steps``) of their records' ``train`` info; ``None`` where none recorded it."""
    values = [
        float(runs[k].train[what]) for k in seeds(runs, ext, row) if (runs[k].train or {}).get(what)
    ]
    return sum(values) / len(values) if values else None


def seconds_per_token(runs: dict[RunKey, Run], ext: str | None, row: str) -> float | None:
    """Training seconds per token of ``row`` at ``ext`` (means over its seeds)."""
    secs, tokens = mean_train(runs, ext, row, "seconds"), mean_train(runs, ext, row, "tokens")
    return secs / tokens if secs and tokens else None


def method_runs(
    records: list[dict[str, Any]], rows: tuple[str, ...], method: str, table: str
) -> dict[RunKey, Run]:
    """:func:`collect_runs` of a method's comparison table (``reproduce TABLE``), with a one-line
    error when the records lack the ``original`` row (every retention's base) or every one of
    the method's ``rows``."""
    runs = collect_runs(records)
    if not any(k[1] == "original" for k in runs):
        raise UserError(f"the {method} report needs the `original` row (every retention's base)")
    if not any(k[1] in rows for k in runs):
        raise UserError(f"no {method} rows in these records: run `reproduce {table}` first")
    return runs


def run_steps(run: Run, fixed: float = 0.0) -> RunSteps | None:
    """A run's training seconds and tokens per optimizer step, from its ``train_steps`` record
    (cumulative ``step_seconds`` and ``step_tokens``); where the records hold none, or one that
    does not cover the recorded steps, the run's totals as one step. ``fixed``: seconds added
    once (LongRecipe's anchor measurement). ``None`` without timings."""
    train = run.train or {}
    if not train.get("seconds") or not train.get("tokens"):
        return None
    total = RunSteps([float(train["seconds"])], [float(train["tokens"])], fixed)
    seconds, tokens = run.step_seconds, run.step_tokens
    covered = len(seconds) == len(tokens) == int(train.get("steps") or 0)
    if not seconds or not covered or tokens[-1] != float(train["tokens"]):
        return total
    return RunSteps(_steps(seconds), _steps(tokens), fixed)


def _steps(cumulative: list[float]) -> list[float]:
    """Each step's own amount from cumulative values."""
    return [b - a for a, b in zip([0.0, *cumulative], cumulative, strict=False)]
