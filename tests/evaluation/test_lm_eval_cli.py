"""``longred-lm-eval``, lm-eval's command line with this suite's models: a problem the suite
reports (here, benchmark data never fetched) ends in one line and exit status 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def test_missing_benchmark_data_is_one_line(tmp_path: Path) -> None:
    from longred_bench.evaluation.harness import tasks_dir
    from longred_bench.models.zoo import tiny_random

    model, tokenizer = tiny_random()
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    script = Path(sys.executable).with_name("longred-lm-eval")
    argv = [str(script), "run", "--model", "hf", "--model_args", f"pretrained={tmp_path / 'model'}"]
    argv += ["--include_path", str(tasks_dir()), "--tasks", "longred_boolq", "--limit", "1"]
    env = {**os.environ, "LONGRED_CACHE": str(tmp_path / "empty"), "OMP_NUM_THREADS": "1"}
    run = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 2, run.stderr[-2000:]
    assert "Traceback" not in run.stderr
    errors = [line for line in run.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [
        f"error: benchmark data is not cached under {tmp_path / 'empty' / 'benchmarks'}; "
        "run `longred-bench data fetch --sources benchmarks`"
    ]
