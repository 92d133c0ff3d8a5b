"""Keep the checkout's own ``kernels/`` folder from standing in for Hugging Face's ``kernels``.

The suite's kernels live in a top-level ``kernels/`` folder, mapped into the package as
``longred_bench.kernels``. A Python started in a checkout's root (``python -m longred_bench``,
``python -c ...``) has that root first on its module path, where the folder is also found as a
top-level package named ``kernels``: the name of Hugging Face's hub-kernels distribution, which
transformers (5.25 on) imports whenever one is found (``from kernels import CUDAProperties``) and
which then fails. :func:`install` puts a finder first on ``sys.meta_path`` that answers for the
top-level name ``kernels`` from the path without such checkout roots: the installed distribution
where there is one, else nothing of its own (the usual search goes on, as before; a folder of
that name without ``__init__.py``, a namespace portion, is no installed package either).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

NAME = "kernels"
OWN_FILES = ("triton_impl.py", "chunked.py", "linear_ce.py")
"""Files of the suite's ``kernels/`` folder that a folder of that name must hold to be it."""


def is_checkout_root(entry: str) -> bool:
    """Whether module-path ``entry`` (``""``: the current folder) holds the suite's own
    ``kernels/`` folder (an entry that cannot be read, or a name too long, is none)."""
    folder = os.path.join(entry or ".", NAME)
    return all(os.path.isfile(os.path.join(folder, name)) for name in OWN_FILES)


class InstalledKernelsFirst(importlib.abc.MetaPathFinder):
    """Finds the top-level ``kernels`` on the module path without checkout roots."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != NAME or path is not None:
            return None
        entries = [e for e in sys.path if isinstance(e, str)]
        rest = [e for e in entries if not is_checkout_root(e)]
        if len(rest) == len(entries):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, rest, target)
        return spec if spec is not None and spec.origin is not None else None  # no namespace


def install() -> None:
    """Put :class:`InstalledKernelsFirst` first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, InstalledKernelsFirst) for f in sys.meta_path):
        sys.meta_path.insert(0, InstalledKernelsFirst())
