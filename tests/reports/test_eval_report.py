"""``eval.md``: one row per task, whatever its metrics and lengths."""

from __future__ import annotations

from pathlib import Path

from longred_bench.reports.eval_report import write_eval_report


def _eval(task: str, metric: str, value: float, length: int | None = None, **kw) -> dict:
    record = {"kind": "eval", "task": task, "metric": metric, "value": value, "length": length}
    return {**record, "stderr": kw.get("stderr"), "n_samples": kw.get("n", 4), "n_over_length": 0}


def test_each_task_is_listed_once_with_its_metrics_and_lengths(tmp_path: Path) -> None:
    records = [
        _eval("longred_tiny_nextsent", "acc", 0.75, stderr=0.25),
        _eval("longred_tiny_nextsent", "acc_norm", 0.5, stderr=0.25),
        _eval("longred_ruler", "score", 40.0, n=None),
        _eval("longred_ruler", "score", 50.0, 1024, n=None),
        _eval("longred_ruler", "score", 30.0, 2048, n=None),
        _eval("longred_ruler_vt", "score", 20.0, n=8),
        _eval("longred_ruler_vt", "score", 10.0, 2048, n=8),
        _eval("longred_ruler_vt", "score", 30.0, 1024, n=8),
    ]
    write_eval_report(records, tmp_path, "t")
    md = (tmp_path / "eval.md").read_text()
    rows = [line for line in md.splitlines() if line.startswith("| longred_")]
    assert [row.split(" | ")[0] for row in rows] == [
        "| longred_tiny_nextsent", "| longred_ruler", "| longred_ruler_vt",
    ]  # fmt: skip
    assert "| task | acc | acc_norm | score (all lengths) | score at 1024 | score at 2048 |" in md
    assert rows[0].startswith("| longred_tiny_nextsent | 0.7500 ± 0.2500 | 0.5000 ± 0.2500 |")
    assert rows[2].endswith("| 20.0000 | 30.0000 | 10.0000 | 8 | 0 |")
    assert (tmp_path / "ruler_lengths.png").is_file()


def test_huge_values_read_with_an_exponent() -> None:
    """A random model's perplexity read ``85952307185700016.0000 ± 8892928479303567360.0000``:
    a million or more is printed with 4 significant digits and an exponent."""
    from longred_bench.reports.eval_report import metrics_table

    records = [_eval("ppl", "word_perplexity", 8.59523071857e16, stderr=8.8929284793e18),
               _eval("swap", "acc", 0.5, stderr=0.1)]  # fmt: skip
    lines = metrics_table(records)
    assert any(line.startswith("| ppl | 8.595e+16 ± 8.893e+18 |") for line in lines), lines
    assert any(line.startswith("| swap |  | 0.5000 ± 0.1000 |") for line in lines), lines


def test_a_metric_not_defined_in_the_run_says_so() -> None:
    """Under PCD a perplexity has no value: its cell was blank, with no word of why."""
    from longred_bench.reports.eval_report import metrics_table

    records = [
        {"kind": "eval", "task": "ppl", "metric": "word_perplexity", "length": None,
         "value": None, "stderr": None, "n_samples": 3,
         "not_defined": "not a probability under PCD"},
        {"kind": "eval", "task": "swap", "metric": "acc", "length": None, "value": 0.5,
         "stderr": 0.1, "n_samples": 3},
    ]  # fmt: skip
    lines = metrics_table(records)
    assert any(line.startswith("| ppl | not defined |") for line in lines)
    assert lines[-1] == "not defined: not a probability under PCD."
    assert "not defined" not in "\n".join(metrics_table(records[1:]))


def test_short_suite_groups_are_marked_and_short_avg_is_the_suites(tmp_path: Path) -> None:
    """``eval --suite short``: lm-eval's group rows (``longred_short`` 0.25: the mean of its
    accuracy tasks only) read like a Short Avg; they are marked as groups, and the Short Avg
    compare and the tables compute (the mean of the category means, exact-match tasks
    included) follows."""

    def leaf(task: str, metric: str, value: float, group: str) -> dict:
        return {**_eval(task, metric, value, n=2), "suite": "short", "group": group}

    records = [
        leaf("longred_arc_easy", "acc", 0.5, "longred_common"),
        leaf("longred_piqa", "acc", 0.0, "longred_common"),
        leaf("longred_boolq", "acc", 1.0, "longred_rc"),
        leaf("longred_squad", "exact_match,remove_whitespace", 0.0, "longred_rc"),
        {**_eval("longred_rc", "acc", 1.0, n=None), "suite": "short", "group": "longred_short"},
        {**_eval("longred_short", "acc", 0.5, n=None), "suite": "short", "group": None},
    ]
    write_eval_report(records, tmp_path, "t")
    md = (tmp_path / "eval.md").read_text()
    assert "| longred_short (group) | 0.5000 |" in md and "| longred_rc (group) | 1.0000 |" in md
    assert "| longred_boolq | 1.0000 |" in md  # a leaf keeps its name
    assert "not LongReD's Short Avg" in md
    # common: (50 + 0) / 2 = 25; rc: (100 + 0) / 2 = 50; Short Avg 37.5 (lm-eval's group: 50)
    assert "| common | longred_arc_easy, longred_piqa | 25.00 |" in md
    assert "| rc | longred_boolq, longred_squad | 50.00 |" in md
    assert "| Short Avg (2 categories) | | 37.50 |" in md


def test_tasks_run_on_their_own_say_their_short_avg_is_a_plain_mean(tmp_path: Path) -> None:
    """``eval --suite short --tasks ...`` read "(no group) | ... | 21.45" and "Short Avg (1
    categories)": a plain mean of the tasks shown as LongReD's; it says what it is, as
    ``compare`` does."""
    scores = (("longred_arc_easy", 0.5), ("longred_lambada_openai", 0.2))
    records = [{**_eval(t, "acc", v, n=2), "suite": "short", "group": None} for t, v in scores]
    write_eval_report(records, tmp_path, "t")
    md = (tmp_path / "eval.md").read_text()
    assert "(no group)" not in md and "categories) |" not in md
    assert ("Short Avg: 35.00, the mean of the 2 tasks above (longred_arc_easy, "
            "longred_lambada_openai): they ran on their own, not through LongReD's category "
            "groups, so it is no mean of category means.") in md  # fmt: skip


def test_one_category_is_named_one_category(tmp_path: Path) -> None:
    """``short_tiny``'s two Language tasks alone read "Short Avg (1 categories)"."""
    scores = (("longred_tiny_swap", 0.5), ("longred_tiny_replace", 1.0))
    records = [{**_eval(t, "acc", v), "suite": "short_tiny", "group": None} for t, v in scores]
    write_eval_report(records, tmp_path, "t")
    assert "| Short Avg (1 category) | | 75.00 |" in (tmp_path / "eval.md").read_text()


def test_the_footnote_gives_the_scale_of_the_suites_values() -> None:
    """RULER's group row ended with "accuracies as fractions" above scores of 0-100."""
    from longred_bench.reports.eval_report import metrics_table

    ruler = [{**_eval("longred_ruler", "score", 40.0), "group": "longred_ruler"},
             {**_eval("longred_ruler", "score", 40.0, 1024), "group": "longred_ruler"}]  # fmt: skip
    assert "Values as lm-eval reports them (scores 0-100)." in "\n".join(metrics_table(ruler))
    short = [{**_eval("longred_short_tiny", "acc", 0.5), "group": "longred_short_tiny"}]
    assert "(accuracies as fractions)" in "\n".join(metrics_table(short))


def test_eval_md_names_the_pcd_settings_the_records_ran_with() -> None:
    """``--pcd-alpha 3`` and the defaults gave the same eval.md: it showed no PCD setting."""
    from longred_bench.reports.pcd_settings import pcd_lines

    pcd = {"alpha": 3.0, "plausibility": "adaptive", "beta": 0.1, "top_k": 50,
           "window_rule": "fraction 0.25", "first_pair": 0,
           "local": [{"window": 256, "base": 69.19}, {"window": 64, "base": None}]}  # fmt: skip
    lines = pcd_lines([{"kind": "eval", "pcd": pcd}])
    assert lines[0] == ("PCD: alpha 3.0, plausible tokens adaptive, beta 0.1, local window "
                        "fraction 0.25, first pair 0; local windows run: W' 256 with B' 69.19, "
                        "W' 64 (nothing over-rotated).")  # fmt: skip
    topk = pcd_lines([{"kind": "eval", "pcd": {**pcd, "plausibility": "topk", "local": []}}])[0]
    assert "plausible tokens top-50" in topk and topk.endswith("local windows run: none recorded.")
    greedy = pcd_lines([{"kind": "eval", "pcd": {**pcd, "alpha": 0.0, "local": []}}])[0]
    assert greedy.endswith("local windows run: none (alpha 0 runs no local pass).")
    assert pcd_lines([{"kind": "eval", "pcd": None}]) == []  # greedy: nothing said
    assert pcd_lines([{"kind": "eval", "pcd": pcd}], windows=False)[0].endswith("first pair 0.")
