"""The ``tiny-base`` report's rules at their edges: a gain of exactly 1% is not converged, each
retrieval target is met at its threshold exactly, the sample counts it prints are the smallest
over the tasks and lengths (the count every cell has), and a short task's chance is a
percentage as its accuracy is."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from longred_bench.reports.tiny_base_report import build_tiny_base_report, convergence, targets

PHRASED = ("niah_single_1", "vt")
EVERY = ("niah_single_1", "vt", "cwe")
PROV = {"device": "CPU", "git_commit": "abc"}


def test_a_gain_of_exactly_one_percent_is_not_converged() -> None:
    metrics = [{"step": 100, "heldout_brown": 12.5}]
    longer = [*metrics, {"step": 150, "heldout_brown": 12.375}]  # 1% lower, exactly
    assert convergence(metrics, longer)["brown"]["converged"] is False


def _ruler(task: str, length: int, hits: int, n: int = 10, prefix: str = "longred_ruler_") -> list:
    """A task's tidy record and ``n`` item records at ``length``, ``hits`` of them 100."""
    items = [{"kind": "eval_item", "task": prefix + task, "metric": "score", "length": length,
              "doc_id": i, "value": 100.0 if i < hits else 0.0} for i in range(n)]  # fmt: skip
    tidy = {"task": prefix + task, "metric": "score", "length": length, "value": 100.0 * hits / n,
            "n_samples": n, "provenance": PROV}  # fmt: skip
    return [tidy, *items]


def _evals() -> dict:
    """Every target at its threshold: held-out niah_single_1 70, the held-out average 80 against
    a standard 100 (0.8), lm-eval's own 60, and 5 at 1,024 tokens (5, 0 and 10 over the three
    tasks); ``vt`` has fewer samples than the others (10 at 256 tokens, 8 at 1,024)."""
    beyond = _ruler("niah_single_1", 1024, 1, 20) + _ruler("vt", 1024, 0, 8)
    beyond += _ruler("cwe", 1024, 2, 20)
    return {
        "short_tiny": [], "passkey_standard": [],
        "ruler_standard": [r for t in EVERY for r in _ruler(t, 256, 10)] + beyond,
        "ruler_heldout": [r for t in EVERY for r in _ruler(t, 256, 8)],
        "targets_standard": _ruler("niah_single_1", 256, 20, 20) + _ruler("vt", 256, 10),
        "targets_heldout": _ruler("niah_single_1", 256, 14, 20) + _ruler("vt", 256, 9),
        "lmeval_niah": _ruler("niah_single_1", 256, 6, prefix="longred_lmeval_"),
    }  # fmt: skip


def test_each_target_is_met_at_its_threshold() -> None:
    rows = targets(_evals(), PHRASED, EVERY)
    assert [r["value"].estimate for r in rows[::2]] == [70.0, 60.0]
    assert rows[3]["value"].estimate == 5.0
    assert [r["met"] for r in rows] == [True, True, True, True]
    # the averages' counts are the smallest of their tasks': vt's 10 at 256, 8 at 1,024
    assert [r["n"] for r in rows] == [20, 10, 10, 8]


def test_the_ruler_table_gives_the_smallest_count_and_chance_is_a_percentage(
    tmp_path: Path,
) -> None:
    png = tmp_path / "curves.png"
    Image.new("RGB", (4, 4)).save(png)
    info = {"tokens": 1000, "seconds": 60.0, "device": "cpu", "tokens_per_second": 16.7,
            "copy_accuracy": 0.05}  # fmt: skip
    metrics = [{"step": 100, "heldout_brown": 5.0}]
    longer = [*metrics, {"step": 150, "heldout_brown": 4.99}]
    evals = _evals()
    evals["ruler_standard"] = _ruler("cwe", 256, 5, 10) + _ruler("cwe", 1024, 1, 7)
    evals["ruler_heldout"] = []
    evals["short_tiny"] = [
        {"kind": "eval_item", "task": "longred_tiny_passkey", "metric": "acc", "length": None,
         "doc_id": i, "value": 1.0} for i in range(8)
    ]  # fmt: skip
    (md, _) = build_tiny_base_report(metrics, longer, info, evals, png, tmp_path / "out",
                                     command="c", chance={"longred_tiny_passkey": 0.25},
                                     phrased=PHRASED, every=("cwe",))  # fmt: skip
    text = md.read_text()
    assert "Scores 0-100; 7 samples per task and length." in text
    row = "| longred_tiny_passkey (held-out phrasing) | 100.0 [100.0, 100.0] | 25.0 | 8 |"
    assert row in text
