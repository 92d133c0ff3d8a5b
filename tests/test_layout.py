"""The package as installed: every sub-package is in the wheel, and the import contracts of
``pyproject.toml`` (layers top to bottom, no cycles) hold and fail on a new back-edge."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Source folder -> the package it is installed as (pyproject's package-dir).
SOURCES = {
    "longred_bench": "longred_bench",
    "kernels": "longred_bench/kernels",
    "training": "longred_bench/training",
    "tasks": "longred_bench/tasks",
}
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of this checkout, built from a copy of its sources and unpacked."""
    root = tmp_path_factory.mktemp("layout")
    src = root / "src"
    for name in (*SOURCES, "pyproject.toml", "README.md"):
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, src / name)
    wheels = root / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(wheels), str(src)],
        check=True, capture_output=True,
    )  # fmt: skip
    site = root / "site"
    with zipfile.ZipFile(next(wheels.glob("*.whl"))) as wheel:
        wheel.extractall(site)
    return site


def test_every_source_package_is_in_the_wheel(site: Path) -> None:
    expected = {
        f"{installed}/{init.parent.relative_to(REPO / folder)}".rstrip("/.")
        for folder, installed in SOURCES.items()
        for init in (REPO / folder).rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    shipped = {
        str(init.parent.relative_to(site)) for init in (site / "longred_bench").rglob("__init__.py")
    }
    assert expected, "no packages found in the source folders"
    assert expected - shipped == set(), "packages missing from pyproject's package list"
    assert (site / "longred_bench/training/recipes/longred.yaml").is_file()
    assert (site / "longred_bench/tasks/longred_niah.yaml").is_file()


def _lint_imports(site: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", str(REPO / "pyproject.toml")],
        cwd=site, capture_output=True, text=True, env={"PYTHONPATH": str(site), "PATH": ""},
    )  # fmt: skip


def test_import_contracts_hold(site: Path) -> None:
    result = _lint_imports(site)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 kept, 0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "message"),
    [
        # a primitive importing a command body: a layer back-edge
        ("models/rope.py", "from longred_bench.jobs import drift", "is not allowed to import"),
        # a lazy import inside a function that closes a circle between two table modules
        (
            "reproduce/pool.py",
            "def _back():\n    from longred_bench.reproduce import engine\n",
            "No cycles are allowed in longred_bench.reproduce",
        ),
    ],
)
def test_a_new_back_edge_breaks_the_contracts(
    site: Path, tmp_path: Path, module: str, line: str, message: str
) -> None:
    broken = tmp_path / "site"
    shutil.copytree(site, broken)
    path = broken / "longred_bench" / module
    path.write_text(path.read_text() + "\n\n" + line + "\n")
    result = _lint_imports(broken)
    assert result.returncode != 0
    assert message in result.stdout
