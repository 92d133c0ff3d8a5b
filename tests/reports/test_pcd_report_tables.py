"""The tables of ``pcd.md`` besides the verdicts: the dev grid marks the best PCD setting even
where greedy decoding (the reference, alpha 0) scores higher on the dev split; the failure rows
show 24 characters either side of the first difference of the two outputs, which, where one
output is a prefix of the other, is at the end of the shorter; and a perplexity reads "not
defined" under PCD only for a line that ran under PCD."""

from __future__ import annotations

from typing import Any

from longred_bench.reports.pcd_failures import failures, first_difference
from longred_bench.reports.pcd_report import _perplexities, dev_table


def _dev(alpha: float, fraction: float | None, values: list[float]) -> list[dict[str, Any]]:
    return [
        {"part": "dev", "kind": "eval_item", "metric": "score", "line": "original",
         "alpha": alpha, "local_fraction": fraction, "task": "longred_ruler_vt",
         "length": 1024, "doc_id": i, "value": v, "seed": 7}
        for i, v in enumerate(values)
    ]  # fmt: skip


def test_the_chosen_setting_is_the_best_pcd_one_not_greedy() -> None:
    records = [*_dev(0.0, None, [90.0, 90.0]), *_dev(1.5, 0.25, [60.0, 40.0]),
               *_dev(0.5, 0.5, [70.0, 70.0]), *_dev(0.5, 0.25, [20.0, 40.0])]  # fmt: skip
    lines = dev_table(records)
    assert lines[2] == "| alpha | local fraction | original | mean |"
    assert lines[4:] == [
        "| 0 | - | 90.0 | 90.0 |",
        "| 0.5 | 0.25 | 30.0 | 30.0 |",
        "| **0.5** | **0.5** | **70.0** | **70.0** |",
        "| 1.5 | 0.25 | 50.0 | 50.0 |",
    ]
    assert "(2 samples per setting and line: 1 tasks x lengths 1024)" in lines[0]
    assert lines[0].endswith(" Seeds: [7].")


def test_first_difference_of_a_prefix_is_the_shorter_length() -> None:
    assert first_difference("1325545", "1325545, 1325546") == 7
    assert first_difference("7286931.", "7080731.") == 1
    assert first_difference("", "x") == 0


def _ruler(decoding: str, value: float, response: str) -> dict[str, Any]:
    return {"part": "ruler", "kind": "eval_item", "line": "original", "task": "longred_ruler_vt",
            "length": 1024, "doc_id": 3, "decoding": decoding, "value": value,
            "response": response, "target": ["12345"]}  # fmt: skip


def test_a_failure_row_shows_24_characters_either_side_of_the_difference() -> None:
    context = "The answer you look for: " * 2  # 50 characters the two outputs share
    greedy = context + "12345, 12345, 12345, 12345."  # 27 characters after it
    rows = failures([_ruler("greedy", 100.0, greedy), _ruler("pcd", 0.0, context)])
    cells = [c.strip() for c in rows[-1].strip("|").split("|")]
    assert cells[:7] == ["original", "vt", "1024", "3", "12345", "100 / 0", "50"]
    assert cells[7] == f"`{context[-24:]}⟦12345, 12345, 12345, 123⟧`"
    assert cells[8] == f"`{context[-24:]}⟦⟧`"


def _ppl(decoding: str, value: float, line: str = "abf") -> dict[str, Any]:
    return {"part": "short", "kind": "eval", "line": line, "task": "cloze",
            "metric": "word_perplexity", "decoding": decoding, "value": value}  # fmt: skip


def test_a_line_without_a_pcd_run_has_no_undefined_perplexity() -> None:
    rows = _perplexities(
        [_ppl("greedy", 12.34), _ppl("greedy", 20.0, "pi"), _ppl("pcd", 0.0, "pi")]
    )
    assert rows == ["| abf | cloze | 12.3 |  |", "| pi | cloze | 20.0 | not defined |"]


def test_failure_rows_follow_lengths_and_samples_in_numeric_order() -> None:
    """The rows shown (the first few) are taken in numeric order of length and sample: as
    text, sample 11 came before 5 and length 512 after 1024."""
    records = [
        {**_ruler(d, v, r), "length": n, "doc_id": i}
        for n, i in ((1024, 11), (512, 11), (1024, 5), (512, 5))
        for d, v, r in (("greedy", 100.0, "12345"), ("pcd", 0.0, "1"))
    ]
    rows = failures(records)[2:]
    order = [tuple(c.strip() for c in row.strip("|").split("|")[2:4]) for row in rows]
    assert order == [("512", "5"), ("512", "11"), ("1024", "5"), ("1024", "11")]
