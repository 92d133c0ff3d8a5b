"""The ``tiny-base`` report: the convergence rule, the retrieval targets (each able to fail), the
copy warm-up line and the per-length sample count, built from records alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from longred_bench.reports.tiny_base_report import (
    build_tiny_base_report,
    convergence,
    targets,
)

PHRASED = ("niah_single_1", "vt")
EVERY = ("niah_single_1", "vt", "cwe")
PROV = {"device": "CPU", "git_commit": "abc"}


def _metrics(final: float) -> list[dict]:
    return [
        {"step": 50, "heldout_brown": 6.0},
        {"step": 80, "heldout_brown": 5.0},
        {"step": 100, "heldout_brown": final},
    ]


def _longer(final: float, after: float) -> list[dict]:
    return [*_metrics(final), {"step": 125, "loss": 4.0}, {"step": 150, "heldout_brown": after}]


def test_convergence_compares_the_run_with_its_longer_continuation() -> None:
    done = convergence(_metrics(5.0), _longer(5.0, 4.96))["brown"]
    assert done["converged"] is True and done["longer_steps"] == 150  # 0.8% gain
    slow = convergence(_metrics(5.0), _longer(5.0, 4.8))["brown"]
    assert slow["converged"] is False and abs(slow["gain"] - 0.04) < 1e-12
    with pytest.raises(ValueError, match="not after 100"):
        convergence(_metrics(5.0), _metrics(4.0))
    with pytest.raises(ValueError, match="no held-out loss"):
        convergence([{"step": 1, "loss": 3.0}], _longer(5.0, 4.0))


def _ruler(task: str, length: int, hits: int, n: int = 10, prefix: str = "longred_ruler_") -> list:
    """A task's tidy record and ``n`` item records at ``length``, ``hits`` of them 100."""
    items = [
        {"kind": "eval_item", "task": prefix + task, "metric": "score", "length": length,
         "doc_id": i, "value": 100.0 if i < hits else 0.0}
        for i in range(n)
    ]  # fmt: skip
    tidy = {"task": prefix + task, "metric": "score", "length": length, "value": 100.0 * hits / n,
            "n_samples": n, "provenance": PROV}  # fmt: skip
    return [tidy, *items]


def _evals(*, single: int = 9, held_vt: int = 8, own: int = 7, beyond: int = 0) -> dict:
    standard = [
        r for t in EVERY for n in (256, 1024) for r in _ruler(t, n, 9 if n == 256 else beyond)
    ]
    heldout = [r for t in EVERY for n in (256, 1024) for r in _ruler(t, n, 8 if n == 256 else 0)]
    short = [
        {"task": "longred_tiny_passkey", "metric": "acc", "length": None, "value": 0.9,
         "n_samples": 10, "provenance": PROV},
        *({"kind": "eval_item", "task": "longred_tiny_passkey", "metric": "acc", "length": None,
           "doc_id": i, "value": float(i < 9)} for i in range(10)),
    ]  # fmt: skip
    return {
        "short_tiny": short,
        "passkey_standard": [],
        "ruler_standard": standard,
        "ruler_heldout": heldout,
        "targets_standard": _ruler("niah_single_1", 256, 9) + _ruler("vt", 256, 9),
        "targets_heldout": _ruler("niah_single_1", 256, single) + _ruler("vt", 256, held_vt),
        "lmeval_niah": _ruler("niah_single_1", 256, own, prefix="longred_lmeval_"),
    }


def test_targets_are_met_by_a_model_that_passes_them() -> None:
    rows = targets(_evals(), PHRASED, EVERY)
    assert [r["met"] for r in rows] == [True, True, True, True]
    assert rows[0]["value"].estimate == 90.0 and rows[0]["n"] == 10
    assert rows[1]["value"].estimate == pytest.approx((90 + 80) / 2 / 90)
    assert rows[2]["value"].estimate == 70.0


@pytest.mark.parametrize(
    ("change", "failed"),
    [
        ({"single": 6}, 0),  # held-out niah_single_1 60 < 70
        ({"single": 5, "held_vt": 5}, 1),  # held-out average 50 < 0.8 x 90
        ({"own": 5}, 2),  # lm-eval's niah_single_1 50 < 60
        ({"beyond": 1}, 3),  # 10 at 4x the window > 5
    ],
)
def test_each_target_can_fail(change: dict, failed: int) -> None:
    rows = targets(_evals(**change), PHRASED, EVERY)
    assert not rows[failed]["met"]


def _curves_png(tmp_path: Path) -> Path:
    """A stand-in for the build's curves PNG, which the report copies."""
    png = tmp_path / "curves.png"
    Image.new("RGB", (4, 4)).save(png)
    return png


def test_report_names_the_warmup_targets_and_samples_per_length(tmp_path: Path) -> None:
    png = _curves_png(tmp_path)
    warm = {"stages": [{"longest": 8, "steps": 450, "copy_accuracy": 0.99, "reached": True}],
            "steps": 450, "tokens": 1843200, "seconds": 256.0, "copy_accuracy": 0.99,
            "copy_until": 0.9, "reached": True}  # fmt: skip
    info = {"tokens": 1000, "seconds": 60.0, "device": "cpu", "tokens_per_second": 16.7,
            "warmup": warm, "copy_accuracy": 0.05}  # fmt: skip
    kwargs = {"command": "cmd", "chance": {"longred_tiny_passkey": 0.25}, "phrased": PHRASED,
              "every": EVERY}  # fmt: skip
    (md, _) = build_tiny_base_report(
        _metrics(4.95), _longer(4.95, 4.94), info, _evals(single=6), png, tmp_path / "out", **kwargs
    )
    text = md.read_text()
    assert "Copy warm-up before the pretraining mix" in text and "450 steps" in text
    assert "threshold 0.9 reached" in text and "after pretraining: 0.050" in text
    assert "| niah_single_1 | 90.0 / 80.0 | 0.0 / 0.0 |" in text
    assert "10 samples per task and length" in text
    assert "| held-out niah_single_1 at 256 | >= 70 | 60.0 [" in text and "| **no** |" in text
    assert "| longred_tiny_passkey (held-out phrasing) | 90.0 [" in text
    info.pop("warmup")
    (md, _) = build_tiny_base_report(
        _metrics(4.95), _longer(4.95, 4.94), info, _evals(), png, tmp_path / "out2", **kwargs
    )
    assert "Copy warm-up" not in md.read_text()


def test_report_names_the_commits_and_source_hashes_of_every_evaluation(tmp_path: Path) -> None:
    png = _curves_png(tmp_path)
    info = {"tokens": 1000, "seconds": 60.0, "device": "cpu", "tokens_per_second": 16.7,
            "copy_accuracy": 0.05}  # fmt: skip
    evals = _evals()
    later = {"device": "CPU", "git_commit": "def", "source_hash": "f" * 64, "dirty": True}
    evals["lmeval_niah"] = [{**r, "provenance": later} if "provenance" in r else r
                            for r in evals["lmeval_niah"]]  # fmt: skip
    (md, _) = build_tiny_base_report(
        _metrics(4.95), _longer(4.95, 4.94), info, evals, png, tmp_path / "out",
        command="cmd", chance={"longred_tiny_passkey": 0.25}, phrased=PHRASED, every=EVERY,
    )  # fmt: skip
    line = next(x for x in md.read_text().splitlines() if x.startswith("- Evaluated on"))
    assert "`abc`" in line and "`def`" in line
    assert "source `ffffffffffff` (dirty), none for older records" in line


def test_the_records_beside_the_report_hold_what_it_is_built_from() -> None:
    """tiny_base.md had no records beside it: none of its numbers could be recomputed. Its
    records hold every evaluation's (named by unit), both runs' metrics lines and run.json."""
    from longred_bench.reproduce.tiny_base import report_records

    evals = {"short_tiny": [{"kind": "eval_item", "doc_id": 0, "value": 1.0}],
             "ruler_standard": [{"kind": "eval", "value": 0.5}]}  # fmt: skip
    metrics = [{"step": 1, "loss": 3.0}, {"step": 2, "loss": 2.5}]
    longer = [{"step": 3, "loss": 2.4}]
    records = report_records(evals, metrics, longer, {"tokens": 10, "device": "cpu"})
    assert [r["unit"] for r in records if "unit" in r] == ["short_tiny", "ruler_standard"]
    lines = [(r["run"], r["metric"]) for r in records if r["kind"] == "train_metric"]
    assert lines == [("build", metrics[0]), ("build", metrics[1]), ("longer", longer[0])]
    assert records[-1] == {"kind": "train_run", "run": "build",
                           "info": {"tokens": 10, "device": "cpu"}}  # fmt: skip
