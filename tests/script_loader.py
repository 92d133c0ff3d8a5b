"""Load a script of ``benchmarks/`` as a module for its tests (the scripts import their shared
helpers from their own folder, so that folder goes on ``sys.path``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))


def load_script(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` imported as module ``name``."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def load_noxfile() -> ModuleType:
    """``noxfile.py`` as a module, loaded once per process: nox registers sessions globally,
    and loading the file again registers them again (a warning now, an error in later nox)."""
    name = "longred_noxfile"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS.parent / "noxfile.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
