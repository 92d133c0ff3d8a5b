"""``longred_bench.shadowing``: from a checkout's root the suite's ``kernels/`` folder no longer
stands in for Hugging Face's installed ``kernels`` (transformers 5.25 imports it whenever one is
found), and where none is installed the search goes on as before."""

from __future__ import annotations

import importlib.machinery
import subprocess
import sys
from pathlib import Path

from longred_bench.shadowing import OWN_FILES, InstalledKernelsFirst, is_checkout_root


def _trees(tmp_path: Path) -> tuple[Path, Path]:
    """A checkout root with the suite's ``kernels/`` files and a site folder with an installed
    ``kernels`` package of another content."""
    root, site = tmp_path / "checkout", tmp_path / "site"
    for name in ("__init__.py", *OWN_FILES):
        (root / "kernels").mkdir(parents=True, exist_ok=True)
        (root / "kernels" / name).write_text("OWN = True\n")
    (site / "kernels").mkdir(parents=True)
    (site / "kernels" / "__init__.py").write_text("CUDAProperties = 'installed'\n")
    return root, site


def test_the_installed_kernels_is_found_before_a_checkouts_folder(tmp_path, monkeypatch):
    root, site = _trees(tmp_path)
    assert is_checkout_root(str(root)) and not is_checkout_root(str(site))
    monkeypatch.setattr(sys, "path", [str(root), str(site)])
    clash = importlib.machinery.PathFinder.find_spec("kernels", sys.path)
    assert Path(clash.origin) == root / "kernels" / "__init__.py"  # what the usual search finds
    finder = InstalledKernelsFirst()
    assert Path(finder.find_spec("kernels").origin) == site / "kernels" / "__init__.py"
    assert finder.find_spec("kernels.chunked", [str(root / "kernels")]) is None  # not its name
    assert finder.find_spec("torch") is None
    monkeypatch.setattr(sys, "path", [str(root)])  # none installed: the usual search goes on
    assert finder.find_spec("kernels") is None
    monkeypatch.setattr(sys, "path", [str(site)])  # no checkout on the path: the same
    assert finder.find_spec("kernels") is None
    monkeypatch.setattr(sys, "path", [str(root), str(site), "/" + "x" * 300])  # too long to stat
    assert Path(finder.find_spec("kernels").origin) == site / "kernels" / "__init__.py"
    bare = tmp_path / "bare"
    (bare / "kernels").mkdir(parents=True)  # a namespace portion, no installed package
    monkeypatch.setattr(sys, "path", [str(root), str(bare)])
    assert finder.find_spec("kernels") is None


def test_a_python_started_in_a_checkouts_root_imports_the_installed_kernels(tmp_path):
    """``python -c`` in the root puts it first on the path; importing the suite first is what
    ``python -m longred_bench`` does."""
    root, site = _trees(tmp_path)
    env = {"PYTHONPATH": str(site), "PATH": ""}

    def run(code: str) -> str:
        done = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, check=True,
                              capture_output=True, text=True)  # fmt: skip
        return done.stdout.strip()

    assert run("import kernels; print(hasattr(kernels, 'OWN'))") == "True"  # the clash
    assert run("import longred_bench, kernels; print(kernels.CUDAProperties)") == "installed"
