"""Run a Python script with its imports limited to the distributions of a package list (the GPU
image's, ``benchmarks/gpu_image_packages.txt``, by default) plus ``--allow``: which wheels must
travel with a check to a machine that reaches no registry.

A module of an installed distribution outside that set fails to import, as it would there, and is
named on stderr as ``[image] blocked MODULE (DISTRIBUTION)``; the standard library, this project
and modules of no distribution (the benchmark scripts) import as usual. Add the distribution of
each blocked import that stops the script to ``--allow`` and run again until it finishes: the
allowed set is then what to carry (imports that fail inside a ``try`` are printed, not needed).

Example (G5's RULER part at 1,024 tokens on the CPU; the list found is ``gpu_stage.sh ruler``'s)::

    python benchmarks/probe_image_imports.py --allow lm_eval dill datasets multiprocess httpx2 \\
        httpcore2 truststore -- benchmarks/bench_eval.py --suites ruler --ruler-lengths 1024 ...
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.metadata
import os
import re
import runpy
import sys
from pathlib import Path

OWN = ("longred_bench", "_distutils_hack")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


class ImageImports(importlib.abc.MetaPathFinder):
    """Refuses a top-level module whose distributions are all outside ``allowed``."""

    def __init__(self, allowed: set[str]) -> None:
        self.allowed = {_norm(a) for a in allowed}
        self.owners = importlib.metadata.packages_distributions()
        self.blocked: set[str] = set()

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        top = name.split(".")[0]
        owners = self.owners.get(top)
        if top in sys.stdlib_module_names or top in OWN or owners is None:
            return None
        if not any(_norm(o) in self.allowed for o in owners):
            if top not in self.blocked:
                self.blocked.add(top)
                print(f"[image] blocked {top} ({', '.join(owners)})", file=sys.stderr, flush=True)
            raise ModuleNotFoundError(f"{top} is not in the image's packages", name=top)
        return None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--packages", type=Path, default=Path(__file__).with_name("gpu_image_packages.txt")
    )
    p.add_argument("--allow", nargs="*", default=[], help="distributions to carry")
    p.add_argument("script", help="the script to run, then its arguments (after --)")
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args()
    lines = a.packages.read_text(encoding="utf-8").splitlines()
    names = {x.strip() for x in lines if x.strip() and not x.startswith("#")}
    sys.meta_path.insert(0, ImageImports(names | set(a.allow)))
    sys.argv = [a.script, *a.args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(a.script)))
    runpy.run_path(a.script, run_name="__main__")


if __name__ == "__main__":
    main()
