"""The run sections as a reader sees them: the results table's columns, LongReD's Avg and the
perplexity at two decimals (only where a run has one), the passkey column where any run has it,
a column per task up to eight paper_short tasks, retention over the lowest original seed; RULER
by length in length order, runs without RULER left out; the seed table's RULER over every
length; the budget sentence (the median's 10% band, edges included; the odd rows named); the
long data D1; the sample sizes and the RULER scope."""

from __future__ import annotations

from longred_bench.reports.run_sections import (
    call_lines,
    d1_lines,
    results_table,
    ruler_scope,
    ruler_table,
    sample_sizes,
    seed_table,
    task_name,
    training_lines,
)
from longred_bench.reports.runs import Run

CATS = {"reading": ("task",)}
EXT = "pi:factor=2"


def _run(score: float, ruler: dict | None = None, train: dict | None = None, **kw) -> Run:
    return Run(short={"task": score}, short_n={"task": 10}, ruler=ruler or {}, train=train, **kw)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_the_results_table_gives_avg_and_perplexity_where_recorded() -> None:
    runs = {
        (None, "original", 0): _run(40.0, {None: 50.0}, ppl=12.345),
        (EXT, "cpt", 0): _run(30.0, {None: 62.0}),
    }
    lines, _ = results_table(runs, CATS)
    assert _cells(lines[0]) == [
        "extension", "row", "seed", "reading: task", "Short Avg", "retention (shared docs)",
        "RULER", "Avg (5 Short + RULER)/6", "ppl (word, not averaged)",
    ]  # fmt: skip
    assert _cells(lines[2]) == ["-", "original", "0", "40.0 n=10", "40.0 n=10", "", "50.0",
                                "41.7", "12.35"]  # fmt: skip
    # (5 * 30 + 62) / 6 = 35.33; retention 30 / 40 over the same 10 documents
    assert _cells(lines[3]) == [f"`{EXT}`", "CPT, long data", "0", "30.0 n=10", "30.0 n=10",
                                "0.750 n=10", "62.0", "35.3", ""]  # fmt: skip
    without = results_table({k: _run(40.0) for k in runs}, CATS)[0][0]
    assert "ppl" not in without and "passkey" not in without


def test_ruler_by_length_is_in_length_order_and_leaves_out_runs_without_ruler() -> None:
    runs = {
        (EXT, "cpt", 0): _run(30.0, {2048: 40.0, 1024: 80.0, None: 60.0}),
        (EXT, "zero-shot", 0): _run(30.0),
    }
    lines = ruler_table(runs)
    assert lines[0] == "| extension | row | seed | 1024 | 2048 | all lengths |"
    assert lines[2:] == [f"| `{EXT}` | CPT, long data | 0 | 80.0 | 40.0 | 60.0 |", ""]


def test_the_seed_tables_ruler_is_over_every_length() -> None:
    runs = {
        (EXT, "cpt", 0): _run(30.0, {1024: 80.0, 2048: 40.0, None: 60.0}),
        (EXT, "cpt", 1): _run(34.0, {1024: 90.0, 2048: 30.0, None: 60.5}),
    }
    (row,) = [line for line in seed_table(runs, CATS) if line.startswith(f"| `{EXT}`")]
    assert _cells(row)[3:] == ["30.00, 34.00", "4.00", "60.00, 60.50", "0.50"]


def _trained(tokens: list[int], steps: list[int] | None = None) -> dict:
    steps = steps or [100] * len(tokens)
    rows = ("cpt", "mix-cpt", "longred-c", "longred-u")
    return {(EXT, rows[i], 1): _run(30.0, train={"steps": s, "tokens": t, "seconds": 5.4})
            for i, (t, s) in enumerate(zip(tokens, steps, strict=True))}  # fmt: skip


def test_token_counts_within_a_tenth_of_the_median_are_one_budget() -> None:
    text = "\n".join(training_lines(_trained([1000, 1000, 1100])))
    assert (
        "Every trained row used the same budget: 100 steps and 1000-1100 tokens (counted "
        "without padding; within 10% of the median 1000)." in text
    )
    assert "| 100 | 1000 | 5.4 |" in text  # two figures under 10 s (whole seconds above)
    assert "Every trained row used the same budget: 100 steps and 1000 tokens." in "\n".join(
        training_lines(_trained([1000, 1000]))
    )


def test_rows_of_other_steps_are_named() -> None:
    text = "\n".join(training_lines(_trained([1000, 1000, 1000], [100, 100, 50])))
    assert "most used 100 steps and about 1000 tokens" in text
    assert "tokens beyond 10%): LongReD-C `pi:factor=2` seed 1. Compare" in text


def test_the_long_data_line_gives_the_retrieval_share_and_run_counts() -> None:
    def run(data: str, fraction: float | None) -> Run:
        return _run(30.0, train={"long_data": data, "retrieval_fraction": fraction})

    one = {
        (EXT, "cpt", 0): run("pg19+retrieval", 0.25),
        (EXT, "cpt", 1): run("pg19+retrieval", 0.25),
    }
    assert d1_lines(one, list(one))[0] == (
        "Long data (D1) of every trained row: `pg19+retrieval` (25% of rows retrieval rows at "
        "the long length)."
    )
    two = {**one, (EXT, "mix-cpt", 0): run("pg19", None)}
    assert d1_lines(two, list(two))[0] == (
        "Long data (D1) differs between trained rows: `pg19+retrieval` (25% of rows retrieval "
        "rows at the long length): 2 runs; `pg19` (prose only): 1 runs."
    )


def test_sample_sizes_give_documents_and_samples_per_run() -> None:
    items = {"ruler_vt": {1024: {0: 1.0, 1: 0.0}}, "ruler_cwe": {1024: {0: 1.0, 1: 1.0}}}
    runs = {(EXT, "cpt", 0): _run(30.0, ruler_items=items), (EXT, "cpt", 1): _run(31.0)}
    assert sample_sizes(runs, []) == (
        "Per run: short tasks 10 documents each; RULER 2 samples per task and length; "
        "0 short document(s) skipped as over-length in all."
    )
    one = {(EXT, "cpt", 0): Run(short={"t": 1.0}, short_n={"t": 1}, ruler_items={"v": {8: {0: 1}}})}
    assert sample_sizes(one, []).startswith("Per run: short tasks 1 document each; RULER 1 sample ")
    one[(EXT, "cpt", 1)] = Run(short={"t": 1.0}, short_n={"t": 10})
    assert sample_sizes(one, []).startswith("Per run: short tasks 1-10 documents each;")
    mixed = {**runs, (EXT, "cpt", 2): Run(short={"t": 1.0}, short_n={"t": 12})}
    assert "short tasks 10-12 documents each" in sample_sizes(mixed, [])


def test_task_names_and_the_ruler_scope_drop_the_suite_prefixes() -> None:
    assert task_name("longred_tiny_swap") == "swap"
    tasks = {("longred_ruler_vt", 1024): 50.0, ("longred_ruler_cwe", 1024): 40.0}
    scope = ruler_scope({(EXT, "cpt", 0): _run(30.0, ruler_tasks=tasks)})
    assert scope.startswith("the mean over its 2 tasks (cwe, vt) at the lengths")


def test_the_call_line_gives_the_wall_time() -> None:
    assert call_lines([], "reproduce table3", 125.0, "")[0] == (
        "- Command: `reproduce table3`; wall time 2 min 05 s."
    )


def test_retention_is_over_the_lowest_original_seed() -> None:
    runs = {(None, "original", 1): _run(50.0), (None, "original", 0): _run(40.0),
            (EXT, "cpt", 0): _run(30.0)}  # fmt: skip
    lines, _ = results_table(runs, CATS)
    assert _cells(lines[-1])[5] == "0.750 n=10"  # 30 / 40, seed 0's


def test_the_passkey_column_is_shown_when_any_run_has_it() -> None:
    passkey = Run(short={"task": 30.0, "longred_tiny_passkey": 90.0}, short_n={"task": 10})
    runs = {(None, "original", 0): _run(40.0), (EXT, "cpt", 0): passkey}
    lines, _ = results_table(runs, CATS)
    assert _cells(lines[0])[-1] == "passkey (retrieval, not averaged)"
    assert _cells(lines[2])[-1] == "" and _cells(lines[3])[-1] == "90.0"


def test_paper_short_of_eight_tasks_keeps_a_column_per_task() -> None:
    cats = {"General": tuple(f"t{i}" for i in range(4)), "Common": tuple(f"u{i}" for i in range(4))}
    run = Run(short={t: 50.0 for m in cats.values() for t in m}, paper_short=True)
    header = _cells(results_table({(None, "original", 0): run}, cats)[0][0])
    assert header[3:5] == ["General: t0", "General: t1"] and "Short Avg" in header
