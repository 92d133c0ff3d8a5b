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
