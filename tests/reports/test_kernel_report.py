"""Tests for the GPU relation-KL benchmark's formulas and writers and for the kernel report.

Everything here runs on CPU in seconds. The GPU CSV rows built below are test inputs for the
writers and the report (made-up timings, marked as such in the device column); they are never
results.
"""

from __future__ import annotations

import csv
import importlib.util
import shutil
import sys
import time
from pathlib import Path

import pytest
import torch

from longred_bench.reports import kernel_bound
from longred_bench.reports.kernel import (
    EXACTNESS_TESTS,
    PENDING_GPU,
    build_kernel_report,
    loglog_slope,
)

REPO = Path(__file__).resolve().parents[2]
CPU_CSV = REPO / "reports" / "kernels" / "relation_kl_cpu.csv"


def _load_bench():
    path = REPO / "benchmarks" / "bench_relation_kl_gpu.py"
    spec = importlib.util.spec_from_file_location("bench_relation_kl_gpu", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


bench = _load_bench()

# --------------------------------------------------------------------------------- formulas


def test_useful_flops_hand_values() -> None:
    # n=1024, d_t=d_s=128, causal: fwd 2 n^2 256 / 2 = 2^28; fwd+bwd (4 n^2 256 + 4 n^2 128) / 2.
    assert kernel_bound.useful_flops(1024, 128, 128, "fwd", True) == 268_435_456
    assert kernel_bound.useful_flops(1024, 128, 128, "fwd_bwd", True) == 805_306_368
    assert kernel_bound.useful_flops(1024, 128, 128, "fwd", False) == 536_870_912
    assert kernel_bound.useful_flops(1024, 128, 128, "fwd_bwd", False) == 1_610_612_736
    # Different head dims: n=2, d_t=3, d_s=5: fwd 2*4*8 = 64; fwd+bwd 4*4*8 + 4*4*5 = 208.
    assert kernel_bound.useful_flops(2, 3, 5, "fwd", False) == 64
    assert kernel_bound.useful_flops(2, 3, 5, "fwd_bwd", False) == 208
    assert kernel_bound.useful_flops(2, 3, 5, "fwd_bwd", True) == 104
    with pytest.raises(ValueError, match="mode"):
        kernel_bound.useful_flops(2, 3, 5, "bwd", True)


def test_exp_count_hand_values() -> None:
    assert kernel_bound.exp_count(1024, "fwd", True) == 1_048_576  # 2 n^2 / 2
    assert kernel_bound.exp_count(1024, "fwd_bwd", True) == 3_145_728  # 6 n^2 / 2
    assert kernel_bound.exp_count(1024, "fwd", False) == 2_097_152
    assert kernel_bound.exp_count(1024, "fwd_bwd", False) == 6_291_456
    with pytest.raises(ValueError, match="mode"):
        kernel_bound.exp_count(8, "backward", True)


def test_bound_and_row_metrics_hand_values() -> None:
    assert pytest.approx(3.86496e12) == kernel_bound.H100_SXM_EXP_PER_S
    # BH=32, n=1024, d=128, causal forward: 2^33 FLOPs, 2^25 exps.
    mma_s = 8_589_934_592 / 989e12  # 8.6855e-6 s
    exp_s = 33_554_432 / 3.86496e12  # 8.6817e-6 s
    bound, kind = kernel_bound.bound_seconds(8_589_934_592, 33_554_432, 989.0, 3.86496e12)
    assert kind == "mma" and bound == pytest.approx(mma_s) and mma_s > exp_s
    # At d=64 the tensor work halves and the exps bound instead.
    bound, kind = kernel_bound.bound_seconds(4_294_967_296, 33_554_432, 989.0, 3.86496e12)
    assert kind == "exp" and bound == pytest.approx(exp_s)
    m = kernel_bound.row_metrics(
        n=1024,
        d_t=128,
        d_s=128,
        mode="fwd",
        causal=True,
        bh=32,
        time_ms=0.01,
        peak_tflops=989.0,
        exp_per_s=3.86496e12,
    )
    assert m["useful_gflop"] == pytest.approx(8.589934592)
    assert m["tflops"] == pytest.approx(858.9934592)
    assert m["bound_ms"] == pytest.approx(mma_s * 1e3)
    assert m["bound_fraction"] == pytest.approx(mma_s / 1e-5)
    assert m["bound_kind"] == "mma"


def test_predicted_naive_bytes() -> None:
    # 6 fp32 score matrices of 32 x 1024 x 1024 plus a 1024 x 1024 bool mask.
    assert bench.predicted_naive_bytes(32, 1024) == 6 * 32 * 1024 * 1024 * 4 + 1024 * 1024


def test_loglog_slope() -> None:
    assert loglog_slope([1024, 2048, 4096], [3.0, 6.0, 12.0]) == pytest.approx(1.0)
    assert loglog_slope([1024, 2048], [1.0, 4.0]) == pytest.approx(2.0)
    assert loglog_slope([1024], [1.0]) is None


# ------------------------------------------------------------- GPU CSV rows (test inputs)

BASE = {
    "batch": 1,
    "heads": 32,
    "kv_heads": 8,
    "kv_heads_teacher": 8,
    "dtype": "bfloat16",
    "causal": True,
    "peak_tflops": 989.0,
    "exp_per_s": kernel_bound.H100_SXM_EXP_PER_S,
    "device": "test input, not a measurement",
    "torch": "2.11.0",
    "triton": "3.6.0",
    "git_commit": "0" * 40,
    "timestamp": "2026-01-01T00:00:00+00:00",
}


def _row(impl: str, mode: str, d: int, n: int, time_ms: float | None, peak_mib: float) -> dict:
    row = {**BASE, "impl": impl, "mode": mode, "n": n, "head_dim": d, "head_dim_teacher": d}
    if time_ms is None:
        row["status"] = "oom"
        return row
    row.update(status="ok", time_ms=time_ms, time_min_ms=time_ms, reps=10, peak_mib=peak_mib)
    row.update(
        kernel_bound.row_metrics(
            n=n,
            d_t=d,
            d_s=d,
            mode=mode,
            causal=True,
            bh=32,
            time_ms=time_ms,
            peak_tflops=989.0,
            exp_per_s=kernel_bound.H100_SXM_EXP_PER_S,
        )
    )
    return row


def _test_input_rows() -> list[dict]:
    rows = [
        {**_row("triton", "check", 128, 1024, None, 0.0), "status": "ok"},
        _row("triton", "fwd", 128, 4096, 0.3, 1.5),
        _row("triton", "fwd", 128, 8192, 1.0, 3.0),  # 549.8 useful TFLOP/s
        _row("triton", "fwd_bwd", 128, 4096, 2.0, 40.0),
        _row("triton", "fwd_bwd", 128, 8192, 7.0, 80.0),
        _row("eager", "fwd", 128, 4096, 5.0, 6000.0),
        _row("eager", "fwd_bwd", 128, 4096, 20.0, 12000.0),  # 10x slower than triton
        _row("eager", "fwd_bwd", 128, 8192, None, 0.0),
    ]
    rows[0].update(check_fwd_rel_err=1e-6, check_grad_rel_err=2e-3)
    return rows


def _write_gpu_csv(out: Path, rows: list[dict]) -> Path:
    path = out / "relation_kl_gpu.csv"
    bench.write_csv(rows, path, bench.FIELDS)
    return path


def test_gpu_writers_and_target_lines(tmp_path: Path) -> None:
    _write_gpu_csv(tmp_path, _test_input_rows())
    text = bench.write_reports(tmp_path)
    assert (tmp_path / "relation_kl_gpu.md").read_text() == text
    assert (tmp_path / "relation_kl_gpu.png").stat().st_size > 0
    assert "forward >= 400 useful TFLOP/s at d=128, n=8192 (triton): 549.8 TFLOP/s" in text
    assert "of the mma bound: met" in text
    assert "5x faster than eager at d=128, n=4096: 10.0x (triton 2.00 ms" in text
    assert "peak KiB per token 4096: 0.38, 8192: 0.38; log-log slope 1.00" in text
    assert "triton vs fp32 naive, forward relative error 1.00e-06" in text
    assert "| 8192 | 7.000 | oom |" in text  # fwd+bwd table: triton time, eager status


def test_gpu_not_measured_and_eager_skipped(tmp_path: Path) -> None:
    rows = [
        _row("triton", "fwd_bwd", 64, 4096, 1.0, 20.0),
        {**_row("eager", "fwd_bwd", 64, 4096, None, 0.0), "status": "skipped: would need 9 GiB"},
    ]
    _write_gpu_csv(tmp_path, rows)
    text = bench.write_reports(tmp_path)
    assert "(triton): not measured" in text
    assert "eager did not run (skipped: would need 9 GiB)" in text
    assert "d=64, forward+backward: peak KiB per token 4096: 5.00; needs two lengths" in text


def test_merge_rows_replaces_same_key() -> None:
    old = [{k: str(v) for k, v in _row("triton", "fwd", 64, 1024, 1.0, 1.0).items()}]
    old.append({k: str(v) for k, v in _row("triton", "fwd", 64, 2048, 1.0, 1.0).items()})
    new = [_row("triton", "fwd", 64, 1024, 0.5, 1.0)]
    merged = bench.merge_rows(old, new)
    assert [(str(r["n"]), float(r["time_ms"])) for r in merged] == [("2048", 1.0), ("1024", 0.5)]


def test_read_rows_round_trip(tmp_path: Path) -> None:
    path = _write_gpu_csv(tmp_path, _test_input_rows())
    rows = bench.read_rows(path)
    assert len(rows) == 8 and list(rows[0]) == bench.FIELDS
    assert bench.read_rows(tmp_path / "missing.csv") == []


# ------------------------------------------------------------------------------ CLI paths


def test_no_cuda_exits_2_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert bench.main(["--quick", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs a CUDA device" in err
    assert not (tmp_path / "out").exists()


def test_report_only(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert bench.main(["--report-only", "--out", str(tmp_path)]) == 2
    assert "no " in capsys.readouterr().err
    _write_gpu_csv(tmp_path, _test_input_rows())
    assert bench.main(["--report-only", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "relation_kl_gpu.md").is_file()


class _FakeEvent:
    """CPU stand-in for ``torch.cuda.Event`` (wall clock)."""

    def __init__(self, enable_timing: bool = False) -> None:
        self.t = 0.0

    def record(self) -> None:
        self.t = time.perf_counter()

    def elapsed_time(self, end: _FakeEvent) -> float:
        return (end.t - self.t) * 1e3


def test_driver_dry_run_on_cpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """The whole driver on tiny CPU tensors behind a fake CUDA layer: rows, skips, oom, files.

    Timings here mean nothing; the test checks the bookkeeping. Triton runs in its interpreter.
    """
    pytest.importorskip("triton")
    cuda = torch.cuda
    monkeypatch.setattr(bench, "DEVICE", "cpu")
    monkeypatch.setattr(bench, "L2_FLUSH_BYTES", 1024)
    monkeypatch.setattr(cuda, "is_available", lambda: True)
    monkeypatch.setattr(cuda, "get_device_name", lambda *a: "fake GPU (CPU dry run)")
    monkeypatch.setattr(cuda, "Event", _FakeEvent)
    for name in ("synchronize", "reset_peak_memory_stats", "empty_cache"):
        monkeypatch.setattr(cuda, name, lambda *a: None)
    monkeypatch.setattr(cuda, "memory_allocated", lambda *a: 0)
    monkeypatch.setattr(cuda, "max_memory_allocated", lambda *a: 3 * bench.MIB)
    # Free memory: enough for eager at n=32, not at n=64 (predicted 6 * 2 * 64^2 * 4 + 64^2).
    monkeypatch.setattr(cuda, "mem_get_info", lambda *a: (150_000, 1 << 30))
    real_make = bench.make_loss_fn

    def make_loss_fn(impl: str, causal: bool):
        if impl == "compiled":
            raise RuntimeError("inductor unavailable\nsecond line")
        fn = real_make(impl, causal)
        if impl == "chunked":

            def oom(*x):
                if x[0].shape[2] == 64:
                    raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate")
                return fn(*x)

            return oom
        return fn

    monkeypatch.setattr(bench, "make_loss_fn", make_loss_fn)
    common = ["--dims", "16", "--heads", "2", "--kv-heads", "1", "--min-reps", "1"]
    common += ["--rep-ms", "1", "--warmup-ms", "0", "--out", str(tmp_path)]
    assert bench.main([*common, "--lengths", "32", "64", "--check-n", "32"]) == 0
    rows = bench.read_rows(tmp_path / "relation_kl_gpu.csv")
    status = {(r["impl"], r["mode"], r["n"]): r["status"] for r in rows}
    assert status[("triton", "check", "32")] == "ok"
    assert status[("triton", "fwd", "64")] == "ok" and status[("eager", "fwd_bwd", "32")] == "ok"
    assert status[("chunked", "fwd_bwd", "32")] == "ok"
    assert status[("chunked", "fwd", "64")] == "oom"
    assert status[("compiled", "fwd", "32")] == "compile failed: RuntimeError: inductor unavailable"
    assert status[("eager", "fwd", "64")].startswith("skipped: would need 0.000")
    assert len(rows) == 1 + 2 * 2 * 4
    ok = [r for r in rows if r["status"] == "ok" and r["mode"] != "check"]
    assert all(float(r["peak_mib"]) == 3.0 and float(r["tflops"]) > 0 for r in ok)
    assert {r["device"] for r in rows} == {"fake GPU (CPU dry run)"}
    out = capsys.readouterr().out
    assert " triton fwd_bwd d=16   n=64     ok " in out and "## Targets" in out
    assert "- eager fwd d=16 n=64: skipped: would need" in out  # full status below the tables
    assert (tmp_path / "relation_kl_gpu.png").is_file()
    # --append replaces the rows it re-measures and keeps the others.
    rerun = [*common, "--lengths", "32", "--impls", "triton", "--modes", "fwd", "--no-check"]
    assert bench.main([*rerun, "--append"]) == 0
    again = bench.read_rows(tmp_path / "relation_kl_gpu.csv")
    assert len(again) == len(rows) and again[-1]["timestamp"] >= rows[-1]["timestamp"]
    assert [(r["impl"], r["mode"], r["n"]) for r in again[-1:]] == [("triton", "fwd", "32")]


# --------------------------------------------------------------------------- kernel report


def test_kernel_report_cpu_only(tmp_path: Path) -> None:
    cpu_csv = tmp_path / "relation_kl_cpu.csv"
    shutil.copy(CPU_CSV, cpu_csv)
    for gpu_csv in (None, tmp_path / "relation_kl_gpu.csv"):  # absent and missing
        paths = build_kernel_report(cpu_csv, gpu_csv, tmp_path / "out")
        assert [p.name for p in paths] == ["kernel.md", "kernel.png"]
        text = paths[0].read_text()
        assert PENDING_GPU in text
    # Expected cells come from the committed CSV itself, so a re-measurement keeps this valid.
    with open(CPU_CSV, newline="") as fh:
        rows = {(r["impl"], int(r["n"])): r for r in csv.DictReader(fh)}
    naive, chunked = rows[("naive", 8192)], rows[("chunked", 8192)]
    ratio = float(naive["peak_fwd_bwd_mib"]) / float(chunked["peak_fwd_bwd_mib"])
    cells = [
        naive["fwd_bwd_min_ms"],
        chunked["fwd_bwd_min_ms"],
        naive["peak_fwd_bwd_mib"],
        chunked["peak_fwd_bwd_mib"],
    ]
    expected = "| 8192 | " + " | ".join(f"{float(c):.1f}" for c in cells) + f" | {ratio:.1f}x |"
    assert expected in text
    long = rows[("chunked", 16384)]
    assert (
        f"| 16384 | skipped | {float(long['fwd_bwd_min_ms']):.1f} | skipped | "
        f"{float(long['peak_fwd_bwd_mib']):.1f} |  |"
    ) in text
    assert "Naive cannot run here at: n=16384 (skipped: would need 24 GiB)." in text
    assert "(n 512 to 16384), naive 1.9" in text  # chunked slope varies, naive is quadratic
    assert "exact KL and gradients at linear memory" in text and "2604.00004" in text
    assert "4.25M" in text and "256M" in text and "98.3%" in text
    assert naive["device"] in text and naive["git_commit"] in text
    for test_file in EXACTNESS_TESTS:
        assert f"`{test_file}`" in text and (REPO / test_file).is_file()


def test_reports_name_the_rows_source_hashes_where_the_rows_recorded_them(tmp_path: Path) -> None:
    """Rows made with a ``source`` column name it beside their commit, in the GPU report and the
    kernel report's CPU and GPU parts; rows made before it was recorded name the commit only."""
    rows = _test_input_rows()
    for i, row in enumerate(rows):  # two commits and sources: both are named
        row.update(git_commit=f"{i % 2}" * 40, source=f"{i % 2}abc" * 3)
    _write_gpu_csv(tmp_path, rows)
    named = f"`{'0' * 40}` (source `0abc0abc0abc`), `{'1' * 40}` (source `1abc1abc1abc`)"
    assert f"- git commit: {named}" in bench.write_reports(tmp_path)
    cpu_csv = tmp_path / "relation_kl_cpu.csv"
    with open(CPU_CSV, newline="") as fh:
        cpu = list(csv.DictReader(fh))
    for row in cpu:
        row["source"] = "fedcba987654"
    with open(cpu_csv, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(cpu[0]))
        writer.writeheader()
        writer.writerows(cpu)
    text = build_kernel_report(cpu_csv, tmp_path / "relation_kl_gpu.csv", tmp_path / "out")[0]
    text = text.read_text()
    assert f"- Commit `{cpu[0]['git_commit']}` (source `fedcba987654`), measured" in text
    assert f"- Commit {named}, measured" in text
    _write_gpu_csv(tmp_path, _test_input_rows())  # no source column
    assert f"- git commit: `{'0' * 40}`\n" in bench.write_reports(tmp_path)


def test_kernel_report_with_gpu(tmp_path: Path) -> None:
    cpu_csv = tmp_path / "relation_kl_cpu.csv"
    shutil.copy(CPU_CSV, cpu_csv)
    gpu_csv = _write_gpu_csv(tmp_path, _test_input_rows())
    md, png = build_kernel_report(cpu_csv, gpu_csv, tmp_path / "out")
    text = md.read_text()
    assert PENDING_GPU not in text and png.stat().st_size > 0
    assert "test input, not a measurement; torch 2.11.0, triton 3.6.0" in text
    assert f"Commit `{'0' * 40}`" in text
    assert "(triton): 549.8 TFLOP/s" in text
    assert "10.0x (triton 2.00 ms, eager 20.00 ms): met" in text
    assert "GPU forward+backward slope: d=128: triton 1.00 (n 4096 to 8192)" in text
    assert "### d=128, forward+backward" in text


def test_the_kernel_figures_draw_without_a_warning(tmp_path: Path) -> None:
    """Each line's style names its line style: a format string beside it drew a matplotlib
    UserWarning ("linestyle is redundantly defined") into every ``reproduce kernel``."""
    import warnings

    import pandas as pd

    from longred_bench.reports import kernel

    cpu = pd.DataFrame(
        {"n": [256, 512, 256, 512], "impl": ["naive", "naive", "chunked", "chunked"],
         "status": ["ok"] * 4, "peak_fwd_bwd_mib": [1.0, 4.0, 0.5, 1.0]}
    )  # fmt: skip
    _write_gpu_csv(tmp_path, _test_input_rows())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kernel._plot(cpu, None, tmp_path / "kernel.png")
        bench.write_reports(tmp_path)
    assert (tmp_path / "kernel.png").stat().st_size > 0
