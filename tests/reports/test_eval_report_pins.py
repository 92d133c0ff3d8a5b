"""``eval.md``'s perplexity by position, length by length with each length's buckets in order and
perplexity before NLL; and the RULER figure's scores, those of the per-length ``score`` records
only."""

from __future__ import annotations

from typing import Any

from longred_bench.reports.eval_report import _ppl_lines, ruler_matrix


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
