"""``eval.md``'s perplexity by position, length by length with each length's buckets in order and
perplexity before NLL; and the RULER figure's scores, those of the per-length ``score`` records
only; ``paper_short``'s Short Avg table (members marked where LongReD names them, category means,
the mean of the means); logged samples in path order; no group footnote without groups."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from longred_bench.reports.eval_report import _ppl_lines, ruler_matrix, write_eval_report


def _bucket(length: int, start: int, ppl: float) -> dict[str, Any]:
    return {"kind": "ppl", "corpus": "pg19", "length": length, "bucket_start": start,
            "bucket_end": start + 511, "ppl": ppl, "nll": 2.0, "n_tokens": 512}  # fmt: skip


def test_perplexity_rows_go_length_by_length_then_by_position() -> None:
    rows = [_bucket(2048, 0, 9.0), _bucket(1024, 512, 8.5), _bucket(2048, 512, 9.5),
            _bucket(1024, 0, 8.0)]  # fmt: skip
    assert _ppl_lines(rows)[2:] == [
        "| pg19 | 1024 | 0-511 | 8.000 | 2.0000 | 512 |",
        "| pg19 | 1024 | 512-1023 | 8.500 | 2.0000 | 512 |",
        "| pg19 | 2048 | 0-511 | 9.000 | 2.0000 | 512 |",
        "| pg19 | 2048 | 512-1023 | 9.500 | 2.0000 | 512 |",
    ]


def test_the_ruler_figure_reads_only_the_per_length_scores() -> None:
    def rec(metric: str, length: int | None, value: float) -> dict[str, Any]:
        return {"kind": "eval", "task": "ruler_vt", "metric": metric, "length": length,
                "value": value}  # fmt: skip

    records = [rec("score", 1024, 80.0), rec("score_stderr", 1024, 3.0), rec("score", None, 70.0)]
    assert ruler_matrix(records) == {"ruler_vt": {1024: 80.0}}


def _member(task: str, category: str, value: float, source: str) -> dict[str, Any]:
    return {"kind": "eval", "suite": "paper_short", "task": task, "category": category,
            "metric": "acc,none", "headline": "acc,none", "value": value, "source": source,
            "length": None, "n_samples": 4}  # fmt: skip


def test_paper_short_lists_its_members_and_the_mean_of_category_means(tmp_path: Path) -> None:
    records = [
        _member("mmlu", "General", 0.5, "paper"),
        _member("piqa", "Common", 0.8, "paper"),
        _member("siqa", "Common", 0.4, "suite"),
        _member("gsm8k", "Math", 0.3, "paper"),
    ]
    samples = {Path("samples/b.jsonl.gz"): 4, Path("samples/a.jsonl.gz"): 2}
    write_eval_report(records, tmp_path, "t", samples=samples)
    lines = (tmp_path / "eval.md").read_text().splitlines()
    start = lines.index("| category | tasks (* named by LongReD) | mean |")
    assert lines[start + 2 : start + 6] == [
        "| General | mmlu* | 50.00 |",
        "| Common | piqa*, siqa | 60.00 |",
        "| Math | gsm8k* | 30.00 |",
        "| Short Avg (3 categories) | | 46.67 |",
    ]
    assert lines.index("| `samples/a.jsonl.gz` | 2 |") < lines.index("| `samples/b.jsonl.gz` | 4 |")
    assert not any(line.startswith("Values as lm-eval reports them") for line in lines)
