"""``training.peak_memory``: a training run's ``run.json`` carries the peak memory of the call
that trained it (the process's peak resident set on a Linux CPU), reset at the call's start."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from train_helpers import smoke

from longred_bench.training.loop import train

LINUX = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/status")


@LINUX
def test_cpu_peak_is_reset_at_the_start_and_sees_a_large_allocation() -> None:
    # A fresh interpreter: its 64 MiB tensor is mmap-backed and leaves when freed.
    script = """
import json, torch
from longred_bench.training.peak_memory import PeakMemory
first = PeakMemory("cpu")
big = torch.ones(64 * 2**20 // 4)
with_big = first.info()["peak_memory_mib"]
del big
print(json.dumps([with_big, PeakMemory("cpu").info()]))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    with_big, after = json.loads(out.stdout.strip().splitlines()[-1])
    assert with_big - after["peak_memory_mib"] > 32  # the reset forgot the freed 64 MiB
    assert after["peak_memory_kind"] == "process RSS"


@LINUX
@pytest.mark.integration
def test_run_json_records_the_peak_and_the_machines_load(tmp_path: Path) -> None:
    train(smoke("cpt", steps=2), tmp_path / "r", progress=False)
    info = json.loads((tmp_path / "r" / "run.json").read_text())
    assert info["peak_memory_kind"] == "process RSS"
    assert info["peak_memory_mib"] > 10
    assert info["cpus"] >= 1 and info["load_1min_start"] >= 0 and info["load_1min_end"] >= 0
    from longred_bench.jobs.units import finished_run

    assert finished_run(tmp_path / "r")["cpus"] == info["cpus"]  # Table 10 reads it there
