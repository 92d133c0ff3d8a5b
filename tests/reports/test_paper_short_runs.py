"""``paper_short`` (LongReD's 17 benchmarks) inside the table reports: records shaped as the
harness writes them (members with their category, source and headline; group members' subtasks
and documents naming their member), read by :func:`collect_runs` into scores, document counts
and per-document items, and laid out by category with a table of the tasks."""

from __future__ import annotations

import math
from typing import Any

import pytest

from longred_bench.evaluation.paper_suite import CATEGORIES, MEMBERS, member_of, record_fields
from longred_bench.reports.run_sections import results_table, run_sections, task_name
from longred_bench.reports.runs import collect_runs, retention_cell, short_avg_cell
from longred_bench.reports.short_avg import short_categories

N = 10  # documents per task (per subtask of a group member)
GROUPS = ("mmlu", "bbh_fewshot", "minerva_math")  # lm-eval groups: two subtasks each here
EXT = "abf:theta=2e7"


def _ones(p: float) -> list[float]:
    k = round(p * N)
    return [1.0] * k + [0.0] * (N - k)


def paper_records(
    row: str, extension: str | None, p: dict[str, float], *, items: bool = True, skip=()
) -> list[dict[str, Any]]:
    """One run's ``paper_short`` records: each member in ``p`` scores fraction ``p[task]`` of
    its documents (SQuAD v2 in percent, as lm-eval reports it); a group member's two subtasks
    score the same; ``skip``: members without per-document records."""
    common = {"row": row, "extension": extension, "seed": 0, "train": None, "model": "m",
              "rope": extension, "suite": "paper_short", "length": None}  # fmt: skip
    out: list[dict[str, Any]] = []
    for m in MEMBERS:
        if m.task not in p:
            continue
        unit = 1.0 / m.scale  # SQuAD v2's f1 is 0-100
        leaves = [f"{m.task}_a", f"{m.task}_b"] if m.task in GROUPS else [m.task]
        member = member_of({m.task: leaves} if m.task in GROUPS else {}, [m.task])
        values = {leaf: [unit * v for v in _ones(p[m.task])] for leaf in leaves}
        for task in [m.task, *leaves] if m.task in GROUPS else leaves:
            docs = [v for leaf in leaves if task in (leaf, m.task) for v in values[leaf]]
            out.append({**common, "kind": "eval", "task": task, "metric": m.metric,
                        "value": sum(docs) / len(docs), "member": member[task],
                        "n_samples": None if task in GROUPS else N,
                        "group": m.task if task != m.task else None,
                        **record_fields(task)})  # fmt: skip
        if not items or m.task in skip:
            continue
        for leaf in leaves:
            for i, v in enumerate(values[leaf]):
                out.append({**common, "kind": "eval_item", "task": leaf, "metric": m.metric,
                            "doc_id": i, "value": v, "member": m.task,
                            **record_fields(leaf)})  # fmt: skip
    return out


ALL = {m.task: 0.1 * (1 + i % 9) for i, m in enumerate(MEMBERS)}


def _category_mean_of_means(p: dict[str, float]) -> float:
    means = []
    for c in CATEGORIES:
        tasks = [m.task for m in MEMBERS if m.category == c and m.task in p]
        if tasks:
            means.append(sum(100 * p[t] for t in tasks) / len(tasks))
    return sum(means) / len(means)


def test_members_scores_counts_and_documents():
    records = paper_records("original", None, ALL)
    run = collect_runs(records)[(None, "original", 0)]
    for m in MEMBERS:
        assert run.short[m.task] == pytest.approx(100 * ALL[m.task]), m.task
        want_n = 2 * N if m.task in GROUPS else N
        assert run.short_n[m.task] == want_n, m.task
        docs = run.short_items[m.task]
        assert len(docs) == want_n
        # The documents average to the member's score (groups weight subtasks by size).
        assert sum(docs.values()) / len(docs) == pytest.approx(run.short[m.task])
    assert all(isinstance(k, tuple) for k in run.short_items["mmlu"])
    assert all(isinstance(k, int) for k in run.short_items["piqa"])
    assert run.named == {m.task for m in MEMBERS if m.source == "paper"}


def test_counts_do_not_double_when_a_record_appears_twice():
    records = paper_records("original", None, ALL)
    twice = collect_runs(records + [r for r in records if r["kind"] == "eval"])
    once = collect_runs(records)
    key = (None, "original", 0)
    assert twice[key].short_n == once[key].short_n
    assert twice[key].short_n["mmlu"] == 2 * N


def test_short_avg_is_the_mean_of_the_five_category_means_with_an_interval():
    records = paper_records("original", None, ALL)
    cats = short_categories(records)
    assert list(cats) == list(CATEGORIES)
    cell = short_avg_cell(collect_runs(records)[(None, "original", 0)], cats)
    assert cell.value == pytest.approx(_category_mean_of_means(ALL))
    assert cell.ci is not None and cell.ci.low <= cell.value <= cell.ci.high
    assert cell.n == sum(2 * N if m.task in GROUPS else N for m in MEMBERS)


def test_a_member_without_documents_leaves_short_avg_without_an_interval():
    records = paper_records("original", None, ALL, skip=("drop",))
    run = collect_runs(records)[(None, "original", 0)]
    cell = short_avg_cell(run, short_categories(records))
    assert cell.value == pytest.approx(_category_mean_of_means(ALL))
    assert cell.ci is None  # not an interval over 16 of the 17


def test_retention_is_over_the_documents_both_scored():
    worse = {t: v / 2 for t, v in ALL.items()}
    records = paper_records("original", None, ALL) + paper_records("cpt", EXT, worse)
    runs, cats = collect_runs(records), short_categories(records)
    cell = retention_cell(runs[(EXT, "cpt", 0)], runs[(None, "original", 0)], cats)
    want = _category_mean_of_means(worse) / _category_mean_of_means(ALL)
    assert cell.value == pytest.approx(want, rel=0.05)  # halves of 10 documents round
    assert cell.ci is not None and cell.ci[0] <= cell.value <= cell.ci[1]


def test_seventeen_tasks_are_shown_by_category_with_a_task_table_marking_the_papers():
    records = paper_records("original", None, ALL) + paper_records("cpt", EXT, ALL)
    runs, cats = collect_runs(records), short_categories(records)
    table, _ = results_table(runs, cats)
    header = table[0].split(" | ")
    assert [h for h in header if h in CATEGORIES] == list(CATEGORIES)
    assert not any("mmlu" in h for h in header)
    text = "\n".join(run_sections(runs, cats, table))
    assert "## Short tasks" in text and "* named by LongReD" in text
    assert "General: mmlu* |" in text and "Code: mbpp |" in text
    general = next(line for line in table if "| original |" in line).split(" | ")[3]
    assert float(general.split()[0]) == pytest.approx(
        sum(100 * ALL[t] for t in ("mmlu", "bbh_fewshot", "lambada_openai", "triviaqa")) / 4,
        abs=0.05,
    )


def test_other_suites_keep_one_column_per_task_however_many():
    """Category columns are ``paper_short``'s: the offline suite's 10 tasks keep theirs."""
    from longred_bench.reports.runs import Run

    tasks = tuple(f"longred_t{i}" for i in range(10))
    runs = {(None, "original", 0): Run(short=dict.fromkeys(tasks, 50.0))}
    cats = {"Language": tasks[:5], "General": tasks[5:]}
    table, _ = results_table(runs, cats)
    assert all(f"{task_name(t)}" in table[0] for t in tasks)
    assert "## Short tasks" not in run_sections(runs, cats, table)


def test_a_few_tasks_keep_one_column_each():
    few = {t: ALL[t] for t in ("mmlu", "piqa", "gsm8k")}
    records = paper_records("original", None, few)
    runs, cats = collect_runs(records), short_categories(records)
    table, _ = results_table(runs, cats)
    assert "General: mmlu" in table[0] and "## Short tasks" not in run_sections(runs, cats, table)
    assert not math.isnan(short_avg_cell(runs[(None, "original", 0)], cats).value)
