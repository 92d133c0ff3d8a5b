"""``benchmarks/probe_image_imports.py``: a script run with imports limited to a package list
fails on a module outside it, names it, and runs once that distribution is allowed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = Path(__file__).resolve().parents[1] / "benchmarks" / "probe_image_imports.py"


def _run(tmp_path: Path, *allow: str) -> subprocess.CompletedProcess:
    script = tmp_path / "uses_yaml.py"
    script.write_text("import json\nimport yaml\nprint('ran', yaml.safe_load('a: 1'))\n")
    packages = tmp_path / "image.txt"
    packages.write_text("# an image with numpy only\nnumpy\n")
    argv = [sys.executable, str(PROBE), "--packages", str(packages), "--allow", *allow]
    return subprocess.run([*argv, "--", str(script)], capture_output=True, text=True, timeout=60)


def test_a_module_outside_the_list_is_blocked_and_named(tmp_path: Path) -> None:
    done = _run(tmp_path)
    assert done.returncode != 0 and "ran" not in done.stdout
    assert "[image] blocked yaml (PyYAML)" in done.stderr  # json: standard library, not blocked


def test_an_allowed_distribution_imports(tmp_path: Path) -> None:
    done = _run(tmp_path, "pyyaml")  # names match as pip does: case and -_. alike
    assert done.returncode == 0, done.stderr
    assert "ran {'a': 1}" in done.stdout and "[image]" not in done.stderr


def test_the_image_list_holds_the_gpu_images_core() -> None:
    lines = PROBE.with_name("gpu_image_packages.txt").read_text().splitlines()
    names = {x for x in lines if x and not x.startswith("#")}
    assert {"torch", "triton", "transformers", "pandas", "pyarrow"} <= names
    assert not names & {"lm-eval", "lm_eval", "datasets", "dill"}  # what g5r carries
