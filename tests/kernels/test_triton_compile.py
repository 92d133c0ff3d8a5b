"""Tests for compiling the Triton relation-KL kernels for sm_90 without a GPU.

The end-to-end test runs ``python -m longred_bench.kernels.triton_compile`` in a subprocess
without ``TRITON_INTERPRET`` (this test process runs the kernels in the interpreter), so the
installed Triton's compiler and its bundled ``ptxas`` build real Hopper binaries here.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

pytest.importorskip("triton")

import triton

from longred_bench.kernels.triton_compile import (
    compile_launch,
    launches,
    parse_ptxas_log,
    specialisation,
    write_csv,
)
from longred_bench.kernels.triton_impl import TileConfig
from longred_bench.reports.kernel_compile import compile_section, read_compile_csv

REPO = Path(__file__).resolve().parents[2]
# The tail of a real ptxas -v log (Triton 3.6, bwd_db, bf16, d=128, MHA, causal).
PTXAS_LOG = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_relkl_bwd_db_kernel' for 'sm_90a'
ptxas info    : Function properties for _relkl_bwd_db_kernel
    8 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 168 registers, used 1 barriers, 8 bytes cumulative stack size
"""


def test_parse_ptxas_log_reads_registers_and_spills():
    assert parse_ptxas_log(PTXAS_LOG) == (168, 8, 8, 8)
    with pytest.raises(ValueError, match="no ptxas resource report"):
        parse_ptxas_log("ptxas fatal   : Unsupported .version 9.4")


def _nvidia_backend():
    try:
        from triton.backends.compiler import GPUTarget
        from triton.compiler import make_backend

        return make_backend(GPUTarget("cuda", 90, 32))
    except Exception as err:  # no CUDA backend in this Triton build
        pytest.skip(f"Triton has no CUDA backend here: {err}")


def test_specialisation_is_the_one_a_launch_gets():
    backend = _nvidia_backend()
    for n, kv, expect_n_divisible in ((4096, 8, True), (37, 2, False)):
        built = launches(torch.bfloat16, 64, 8, kv, n, causal=True)
        for kernel in ("fwd", "bwd_da", "bwd_db"):
            launch, tiles = built[kernel]
            signature, constexprs, attrs = specialisation(launch, backend)
            names = launch.kernel.arg_names
            assert list(signature) == names
            # Pointers are 16-byte aligned and get the divisibility hint; dtypes follow inputs.
            assert signature["A_s"] == "*bf16" and signature["MASK"] == "*i8"
            assert attrs[(names.index("A_s"),)] == [["tt.divisibility", 16]]
            assert signature["scale_s"] == "fp32"
            # n: divisible by 16 or not; a group of one query head per kv head is a constant.
            assert bool(attrs.get((names.index("n"),))) == expect_n_divisible
            if kv == 8:
                assert signature["group_s"] == "constexpr" and constexprs["group_s"] == 1
            else:
                assert signature["group_s"] == "i32" and "group_s" not in constexprs
            assert constexprs["BLOCK_M"] == tiles.block_m and constexprs["DS"] == 64
            assert constexprs["CAUSAL"] is True and constexprs["HAS_MASK"] is True


def test_launches_use_given_tiles_and_default_otherwise():
    tiles = (TileConfig(32, 16, 2, 1), TileConfig(16, 32, 4, 3))
    built = launches(torch.float16, 128, 4, 2, 64, causal=False, tiles=tiles)
    assert built["fwd"][1] is tiles[0] and built["bwd_db"][1] is tiles[1]
    fwd, _ = built["fwd"]
    assert fwd.grid == (64 // 32, 4) and fwd.meta["num_stages"] == 1
    db, _ = built["bwd_db"]
    assert db.grid == (64 // 32, 2)  # column tiles x (batch x student kv heads)


def test_compile_launch_refuses_the_interpreter():
    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("this process compiles for real")
    launch, _ = launches(torch.bfloat16, 64, 2, 1, 32, causal=True)["fwd"]
    with pytest.raises(RuntimeError, match="without TRITON_INTERPRET"):
        compile_launch(launch)


def test_kernels_compile_for_sm90_with_the_installed_triton(tmp_path):
    _nvidia_backend()
    out = tmp_path / "compile.csv"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path / "triton-cache")
    cmd = [sys.executable, "-m", "longred_bench.kernels.triton_compile", "--dtypes", "bf16"]
    cmd += ["--head-dims", "64", "--kv-heads", "8", "2", "--causal", "true", "--out", str(out)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    with out.open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 6
    assert {(r["kernel"], r["kv_heads"]) for r in rows} == {
        (k, kv) for k in ("fwd", "bwd_da", "bwd_db") for kv in ("8", "2")
    }
    for r in rows:
        assert r["triton"] == triton.__version__ and r["arch"] == "90"
        assert r["git_commit"] and len(r["source"]) == 12 and r["timestamp"].startswith("20")
        assert 0 < int(r["registers"]) <= 255
        assert int(r["shared_bytes"]) > 0
    assert "6 kernels compiled" in proc.stdout


def _record(**kw):
    base = dict(
        triton="3.9.0", arch=90, kernel="fwd", dtype="bf16", head_dim=64, heads=8, kv_heads=2,
        n=4096, causal=True, block_m=128, block_n=64, num_warps=8, num_stages=2, registers=120,
        spill_stores=0, spill_loads=0, stack_bytes=0, shared_bytes=65536, compile_s=1.0,
        git_commit="abc123", source="f00d", timestamp="2026-11-22T00:00:00+00:00",
    )  # fmt: skip
    base.update(kw)
    from longred_bench.kernels.triton_compile import CompileRecord

    return CompileRecord(**base)


def test_write_csv_replaces_rows_of_the_same_key(tmp_path):
    path = tmp_path / "c.csv"
    write_csv([_record(), _record(kernel="bwd_da", registers=200)], path)
    write_csv([_record(registers=99), _record(triton="3.6.0", registers=130)], path)
    df = pd.read_csv(path, dtype={"triton": str})
    assert len(df) == 3
    fwd = df[df["kernel"] == "fwd"].set_index("triton")["registers"].to_dict()
    assert fwd == {"3.9.0": 99, "3.6.0": 130}


def test_compile_section_summarises_versions_ranges_and_spills(tmp_path):
    # Synthetic records: inputs for the report builder, not results.
    records = [
        _record(kv_heads=8, registers=110),
        _record(kv_heads=2, registers=130),
        _record(triton="3.6.0", kv_heads=8, registers=140, spill_stores=24, spill_loads=16),
        _record(triton="3.6.0", kv_heads=2, registers=150),
        _record(kernel="bwd_db", dtype="fp32", head_dim=128, registers=80, shared_bytes=2048),
    ]
    path = tmp_path / "c.csv"
    write_csv(records, path)
    lines = compile_section(read_compile_csv(path), "c.csv")
    text = "\n".join(lines)
    assert "Triton versions: 3.6.0, 3.9.0; 5 kernels compiled, 1 with register spills" in text
    assert "Commit `abc123` (source `f00d`)" in text
    assert "triton 3.6.0 fwd bf16 d=64 kv=8 causal=True: 24 B" in text
    header = next(line for line in lines if line.startswith("| dtype"))
    assert header.index("triton 3.6.0 registers") < header.index("triton 3.9.0 registers")
    assert "| bf16 | 64 | forward | 128x64, 8, 2 | 140-150 | 24 | 110-130 | 0 | 64 |" in lines
    assert "| fp32 | 128 | backward dB | 128x64, 8, 2 |  |  | 80 | 0 | 2 |" in lines


def test_a_csv_without_source_hashes_still_reads(tmp_path):
    path = tmp_path / "old.csv"
    write_csv([_record()], path)
    pd.read_csv(path).drop(columns="source").to_csv(path, index=False)
    assert "- Commit `abc123`, compiled" in "\n".join(compile_section(read_compile_csv(path), "c"))


def test_committed_compile_csv_is_in_the_kernel_report(tmp_path):
    committed = REPO / "reports" / "kernels" / "compile_sm90.csv"
    if not committed.is_file():
        pytest.skip("no committed compile CSV")
    from longred_bench.reports.kernel import build_kernel_report

    cpu = REPO / "reports" / "kernels" / "relation_kl_cpu.csv"
    md, _ = build_kernel_report(cpu, None, tmp_path, compile_csv=committed)
    text = md.read_text()
    df = pd.read_csv(committed, dtype={"triton": str})
    assert f"{len(df)} kernels compiled" in text
    for version in df["triton"].unique():
        assert f"triton {version} registers" in text
