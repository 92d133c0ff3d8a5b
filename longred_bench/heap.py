"""Keep freed heap memory in the process, so large CPU tensors reuse pages (glibc only).

PyTorch's CPU allocator takes every tensor from ``malloc``. glibc serves a block above its mmap
threshold (32 MiB at most) with a fresh ``mmap`` and unmaps it again on ``free``. A training step
that makes logits of ``[B, T, V]`` floats (128 MiB at tiny-base's 32 x 256 x 4,096), their
log-softmax and their gradient thus has the kernel fault in and zero every page of each, every
step: on 2 cores that is a fifth of all CPU time spent in the kernel.

:func:`keep_freed_memory` has glibc serve every block from its heap (``M_MMAP_MAX = 0``) and keep
up to 2 GiB of freed memory at the heap's top (``M_TRIM_THRESHOLD``), so a block freed in one step
is reused in the next. Results are bit-identical (torch aligns each block to 64 bytes itself, so
no kernel sees other addresses' alignment); the price is that the process holds on to its peak
heap until it exits. The command line and Table 3's worker processes call it at start.
``LONGRED_MALLOC=default`` leaves glibc's settings alone; elsewhere than Linux with glibc it does
nothing.
"""

from __future__ import annotations

import ctypes
import os
import platform

from longred_bench.errors import UserError

ENV = "LONGRED_MALLOC"
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_TRIM_AT = 2**31 - 1  # mallopt takes an int: about 2 GiB


def glibc() -> bool:
    """True on Linux with glibc, the only place :func:`keep_freed_memory` acts."""
    return platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


def keep_freed_memory() -> bool:
    """Set glibc's malloc to keep freed memory (module docstring); returns True if it did.

    Raises UserError when ``LONGRED_MALLOC`` is neither ``keep`` (the default) nor ``default``.
    """
    mode = os.environ.get(ENV, "keep").strip().lower() or "keep"
    if mode not in ("keep", "default"):
        raise UserError(
            f"{ENV}={os.environ[ENV]!r} is not a malloc mode: use 'keep' (reuse freed memory, "
            "the default) or 'default' (glibc's own settings)"
        )
    if mode == "default" or not glibc():
        return False
    libc = ctypes.CDLL(None)
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:
        return False
    return bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, _TRIM_AT))
