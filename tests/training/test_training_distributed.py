"""Data-parallel training under torchrun on 2 CPU processes (gloo) against one process: the same
global batch gives the same loss curve within fp32 tolerance."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def _curve(out: Path) -> list[float]:
    return [json.loads(x)["loss"] for x in (out / "metrics.jsonl").read_text().splitlines()]


def _train(out: Path, recipe: str, nproc: int) -> None:
    args = ["train", "--recipe", recipe, "--profile", "smoke", "--set", "steps=3",
            "tokens_per_step=4096", "--out", str(out), "--quiet"]  # fmt: skip
    if nproc == 1:
        cmd = [sys.executable, "-m", "longred_bench", *args]
    else:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               f"--nproc_per_node={nproc}", "-m", "longred_bench", *args]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.integration
@pytest.mark.parametrize("recipe", ["cpt", "longred"])
def test_two_processes_follow_the_one_process_curve(recipe: str, tmp_path: Path) -> None:
    _train(tmp_path / "one", recipe, 1)
    _train(tmp_path / "two", recipe, 2)
    one, two = _curve(tmp_path / "one"), _curve(tmp_path / "two")
    assert len(one) == len(two) == 3
    assert two == pytest.approx(one, rel=1e-4, abs=1e-6)
    assert (tmp_path / "two" / "final" / "config.json").is_file()
