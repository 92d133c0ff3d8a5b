"""Install layout: kernels/ and training/ live only inside the longred_bench namespace; test
modules are named uniquely (pytest imports them by file name)."""

import importlib
import json
import os
import re
import site
import subprocess
import sys
from pathlib import Path

import pytest


def test_no_generic_top_level_modules(tmp_path):
    # Run from an empty directory so the checkout itself is not on sys.path: this checks the
    # installation, as a user's interpreter sees it.
    # Another distribution's module of that name (Hugging Face's `kernels`, which transformers
    # may require) is not this package's: only one from this checkout would be.
    root = Path(__file__).resolve().parent.parent
    probe = (
        "import importlib.metadata as m, importlib.util as u\n"
        "import longred_bench.kernels, longred_bench.training\n"
        "owners = m.packages_distributions()\n"
        "for name in ('kernels', 'training'):\n"
        "    spec = u.find_spec(name)\n"
        "    origin = spec.origin if spec is not None and spec.origin else None\n"
        "    print(origin, ','.join(owners.get(name, [])) or None)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    found = [line.split() for line in out.stdout.splitlines()]
    assert len(found) == 2 and all(len(f) == 2 for f in found), out.stdout
    for origin, owners in found:
        # Anywhere in the checkout (a build/lib copy too) but nox's virtualenvs inside it, which
        # may hold another distribution's module of that name.
        where = Path(origin).resolve() if origin != "None" else None
        ours = where is not None and where.is_relative_to(root)
        assert not ours or where.is_relative_to(root / ".nox"), origin
        assert "longred-bench" not in owners.replace("_", "-").split(","), owners


def test_mapped_subpackages_import():
    kernels = importlib.import_module("longred_bench.kernels")
    training = importlib.import_module("longred_bench.training")
    assert callable(kernels.relation_kl)
    assert training.__doc__


@pytest.mark.integration
def test_wheel_install_serves_the_task_registry(
    tmp_path: Path, brown_dir: Path, cache: Path
) -> None:
    # Build the wheel and install it (not editable) into a fresh virtualenv. The dependencies come
    # from this interpreter's site-packages as plain path entries, so its .pth hooks (this
    # checkout's editable install among them) are not run and only the wheel provides the package.
    from longred_bench.data import fetch as fetch_module

    root = Path(__file__).resolve().parent.parent
    wheels, venv, empty = tmp_path / "wheels", tmp_path / "venv", tmp_path / "empty"
    empty.mkdir()
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    subprocess.run([*pip_wheel, "-q", "-w", str(wheels), str(root)], check=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    (Path(purelib) / "_host_site.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    (wheel,) = wheels.glob("longred_bench-*.whl")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
         "--target", purelib, str(wheel)],
        check=True,
    )  # fmt: skip
    fetch_module.fetch(["brown"], brown_dir, cache=cache)
    env = {**os.environ, "LONGRED_CACHE": str(cache)}

    def run(*argv: str) -> subprocess.CompletedProcess:
        out = subprocess.run(argv, cwd=empty, env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr[-2000:]
        return out

    where = run(str(python), "-c", "import longred_bench; print(longred_bench.__file__)").stdout
    assert Path(where.strip()).is_relative_to(venv)
    tasks = Path(run(str(python), "-m", "longred_bench", "tasks-path").stdout.strip())
    assert tasks.is_relative_to(venv) and (tasks / "_longred_short.yaml").is_file()
    assert (tasks / "ruler_utils.py").is_file() and (tasks / "_ruler_template_yaml").is_file()
    validate = [str(python), "-m", "lm_eval", "validate", "--include_path", str(tasks)]
    run(*validate, "--tasks", "longred_short_tiny,longred_ruler,longred_niah")
    out_dir = tmp_path / "eval"
    ran = run(
        str(python), "-m", "longred_bench", "eval", "--model", "tiny-random", "--suite", "ruler",
        "--tasks", "longred_ruler_niah_single_1", "--lengths", "512", "--samples", "1",
        "--out", str(out_dir), "--quiet",
    )  # fmt: skip
    records = [json.loads(line) for line in (out_dir / "eval.jsonl").read_text().splitlines()]
    assert {r["task"] for r in records if r["kind"] == "eval"} == {"longred_ruler_niah_single_1"}
    # Outside a checkout, provenance names the installed version and git's errors stay hidden;
    # --quiet leaves lm-eval's warnings and progress bars out; the last line gives the wall time.
    installed = "no git checkout (longred-bench 0.1.0)"
    assert records[0]["provenance"]["git_commit"] == installed
    assert records[0]["provenance"]["dirty"] == "unknown"  # no commit to compare with
    assert re.fullmatch(r"[0-9a-f]{64}", records[0]["provenance"]["source_hash"])
    assert json.loads((out_dir / "lm_eval_results.json").read_text())["git_hash"] == installed
    assert "fatal" not in ran.stderr and "Custom kwargs" not in ran.stderr
    assert "it/s]" not in ran.stderr and "requests" not in ran.stderr
    assert re.search(r"^wrote .*eval\.md.* in (\d+ min \d\d|\d+\.\d) s$", ran.stdout.strip(), re.M)


def test_test_modules_have_unique_names() -> None:
    """The test folders have no ``__init__.py``, so pytest imports each test module by its file
    name: a second ``test_x.py`` in another folder stops the whole collection."""
    from collections import Counter

    tests = Path(__file__).resolve().parent
    names = Counter(p.name for p in tests.rglob("test_*.py"))
    assert [name for name, n in names.items() if n > 1] == []
