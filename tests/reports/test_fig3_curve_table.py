"""Figure 3's curve table and header: each step's Short Avg is the mean over its seeds with every
seed listed (the zero-shot model at step 0 says so instead), a snapshot's tokens are its run's
tokens pro rata to the step, and the passkey's documents are named apart from the averaged
tasks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from report_helpers import tiny_run

from longred_bench.reports.fig3_report import build_fig3, curve_table
from longred_bench.reports.runs import Run

EXT = "abf:theta=2e7"


def _run(score: float, train: dict | None = None) -> Run:
    return Run(short={"t": score}, short_items={"t": {d: score for d in range(4)}}, train=train)


def test_each_step_is_the_mean_over_its_seeds_with_its_tokens_pro_rata() -> None:
    train = {"table_steps": 20, "tokens": 4000.0, "steps": 40}
    runs = {(None, None, 0): _run(60.0), (EXT, 0, 0): _run(30.0)}
    runs |= {(EXT, 10, seed): _run(score, train) for seed, score in ((0, 55.0), (1, 50.0))}
    runs |= {(EXT, 40, seed): _run(score, train) for seed, score in ((0, 40.0), (1, 44.0))}
    lines = curve_table(runs, {"gen": ("t",)})
    assert lines[0] == "Original model: Short Avg 60.00."
    assert lines[4:7] == [
        f"| `{EXT}` | 0 |  | 30.00 | zero-shot |",
        f"| `{EXT}` | 10 | 1,000 | 52.50 | 55.00, 50.00 |",
        f"| `{EXT}` | 40 | 4,000 | 42.00 | 40.00, 44.00 |",
    ]


def _with_passkey(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run's records and its passkey task (6 documents), all at ``step``."""
    head = records[0]
    keep = ("row", "extension", "seed", "model", "rope", "provenance", "train", "step")
    base = {k: head[k] for k in keep if k in head} | {"suite": "short_tiny", "length": None,
                                                      "task": "longred_tiny_passkey"}  # fmt: skip
    passkey = [{**base, "kind": "eval", "metric": "acc", "value": 0.5, "n_samples": 6,
                "group": None}]  # fmt: skip
    passkey += [{**base, "kind": "eval_item", "metric": "acc", "doc_id": i, "value": i % 2}
                for i in range(6)]  # fmt: skip
    return records + passkey


def _at(step: int | None, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return _with_passkey([{**r, "step": step} for r in records])


def test_the_header_names_the_passkey_apart_from_the_averaged_tasks(tmp_path: Path) -> None:
    train = {"table_steps": 2, "tokens": 400.0, "steps": 4}
    records = _at(None, tiny_run("original", None, 0.8))
    records += _at(0, tiny_run("zero-shot", EXT, 0.5))
    records += _at(1, tiny_run("cpt", EXT, 0.7, train=train))
    records += _at(4, tiny_run("cpt", EXT, 0.6, train=train))
    md = build_fig3(records, tmp_path, profile="p", command="c")[0].read_text()
    header = next(x for x in md.splitlines() if x.startswith("- Short tasks (documents): "))
    assert header.startswith("- Short tasks (documents): `longred_tiny_lastword` (40), ")
    assert header.endswith(
        "; `longred_tiny_passkey` (6) is scored too, not in Short Avg (retrieval inside the "
        "window)."
    )
    assert header.count("longred_tiny_passkey") == 1
