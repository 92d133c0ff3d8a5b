"""The ``tiny-base`` report: the convergence rule, the copy warm-up line, the per-length sample
count, built from records alone."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from longred_bench.reports.tiny_base_report import build_tiny_base_report, convergence


def _metrics(final: float) -> list[dict]:
    return [
        {"step": 50, "heldout_brown": 6.0},
        {"step": 80, "heldout_brown": 5.0},
        {"step": 100, "heldout_brown": final},
    ]


def test_convergence_compares_the_last_fifth_of_the_steps() -> None:
    assert convergence(_metrics(4.95))["brown"]["converged"] is True  # 1% gain
    slow = convergence(_metrics(4.8))["brown"]
    assert slow["converged"] is False and abs(slow["gain"] - 0.04) < 1e-12


def test_report_names_the_warmup_and_samples_per_length(tmp_path: Path) -> None:
    png = tmp_path / "curves.png"
    Image.new("RGB", (4, 4)).save(png)
    prov = {"device": "CPU", "git_commit": "abc"}
    short = [{"task": "longred_tiny_passkey", "metric": "acc", "length": None, "value": 0.998,
              "n_samples": 479, "provenance": prov}]  # fmt: skip
    ruler = [
        {"task": "longred_ruler_niah_single_1", "metric": "score", "length": n, "value": v,
         "n_samples": 60, "provenance": prov}
        for n, v in ((256, 95.0), (512, 0.0), (1024, 0.0))
    ]  # fmt: skip
    warm = {"stages": [{"longest": 8, "steps": 450, "copy_accuracy": 0.99, "reached": True}],
            "steps": 450, "tokens": 1843200, "seconds": 256.0, "copy_accuracy": 0.99,
            "copy_until": 0.9, "reached": True}  # fmt: skip
    info = {"tokens": 1000, "seconds": 60.0, "device": "cpu", "tokens_per_second": 16.7,
            "warmup": warm, "copy_accuracy": 0.05}  # fmt: skip
    (md, _) = build_tiny_base_report(
        _metrics(4.95), info, {"short_tiny": short, "ruler": ruler}, png, tmp_path / "out",
        command="cmd", chance={"longred_tiny_passkey": 0.25},
    )  # fmt: skip
    text = md.read_text()
    assert "Copy warm-up before the pretraining mix" in text and "450 steps" in text
    assert "threshold 0.9 reached" in text and "after pretraining: 0.050" in text
    assert "| longred_ruler_niah_single_1 | 95.0 | 0.0 | 0.0 |" in text
    assert "20 samples per task and length" in text
    assert "| longred_tiny_passkey | 99.8 | 25.0 | 479 |" in text
    info.pop("warmup")
    (md, _) = build_tiny_base_report(
        _metrics(4.95), info, {"short_tiny": short, "ruler": ruler}, png, tmp_path / "out2",
        command="cmd", chance={},
    )  # fmt: skip
    assert "Copy warm-up" not in md.read_text()
