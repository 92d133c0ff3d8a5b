"""Fixtures of the PCD tests: the built-in ``tiny-random`` model (head size 16, RoPE base 1e4,
window 256), run on one intra-op thread."""

from __future__ import annotations

import pytest
import torch

from longred_bench.models.loading import load


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One intra-op thread: on a shared 2-core machine two OpenMP threads make each of the tiny
    model's small matmuls wait for a busy core (milliseconds instead of microseconds)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tiny():
    return load("tiny-random")
