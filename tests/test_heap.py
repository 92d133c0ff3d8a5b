"""``heap.keep_freed_memory``: large tensors reuse freed pages instead of faulting fresh ones."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from longred_bench.errors import UserError
from longred_bench.heap import ENV, glibc, keep_freed_memory

only_glibc = pytest.mark.skipif(not glibc(), reason="glibc only")

# Allocates, fills and frees a 128 MiB tensor 20 times; prints the minor page faults the last 10
# took (the heap settles in the first few: a freed block is reused once freed neighbours merge).
CHILD = """
import resource, sys, torch
from longred_bench.heap import keep_freed_memory
applied = keep_freed_memory() if sys.argv[1] == "keep" else False
for i in range(20):
    if i == 10:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    x = torch.ones(32, 256, 4096)
    del x
print(int(applied), resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str, env_value: str | None = None) -> tuple[int, int]:
    env = {k: v for k, v in os.environ.items() if k != ENV}
    if env_value is not None:
        env[ENV] = env_value
    out = subprocess.run(
        [sys.executable, "-c", CHILD, mode], env=env, capture_output=True, text=True, check=True
    )
    applied, faults = out.stdout.split()
    return int(applied), int(faults)


@only_glibc
def test_kept_memory_is_reused_instead_of_faulted_in_again():
    _, default = _faults("default")
    applied, kept = _faults("keep")
    assert applied == 1
    # 10 x 128 MiB of 4 KiB pages is 327,680 faults when every block is a fresh mapping; kept,
    # the settled heap hands the same pages out again.
    assert default > 250_000
    assert kept * 10 < default


@only_glibc
def test_malloc_default_leaves_glibc_alone():
    applied, faults = _faults("keep", env_value="default")
    assert applied == 0
    assert faults > 250_000


def test_unknown_malloc_mode_is_a_clear_error(monkeypatch):
    monkeypatch.setenv(ENV, "fast")
    with pytest.raises(UserError, match="LONGRED_MALLOC='fast' is not a malloc mode"):
        keep_freed_memory()
