"""Pinned behaviour of ``training/streams.py``: a window set must be a matrix of windows (rows
of tokens); a flat or a three-way tensor is refused as a set of no windows."""

from __future__ import annotations

import pytest
import torch

from longred_bench.errors import UserError
from longred_bench.training.streams import WindowStream


@pytest.mark.parametrize("shape", [(6,), (2, 3, 4)])
def test_a_window_set_that_is_not_rows_of_tokens_is_refused(shape: tuple[int, ...]) -> None:
    """``ids`` and ``mask`` of the same shape, but not ``[windows, tokens]``."""
    ids = torch.zeros(shape, dtype=torch.long)
    with pytest.raises(UserError, match="no windows"):
        WindowStream("s", ids, torch.ones(shape, dtype=torch.bool), seed=0)
