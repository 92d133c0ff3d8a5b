"""``longred_bench.metrics.similarity.token_cosine`` works in fp64 whatever its inputs' dtype:
its result is fp64, and a cosine that differs from 1 by less than fp32 can show (a hidden state
nearly, not exactly, the original's) is not rounded to exactly 1."""

from __future__ import annotations

import math

import pytest
import torch

from longred_bench.metrics.similarity import masked_cosine_sums, token_cosine


def test_a_cosine_just_below_one_is_not_rounded_to_one() -> None:
    a = torch.tensor([[[1.0, 1e-4]]])  # fp32 inputs
    b = torch.tensor([[[1.0, 0.0]]])
    cos = token_cosine(a, b)
    assert cos.dtype == torch.float64
    second = float(torch.tensor(1e-4))  # 1e-4 as fp32 holds it
    assert cos.item() == pytest.approx(1.0 / math.sqrt(1.0 + second**2), rel=0, abs=1e-15)
    assert cos.item() < 1.0
    sums, counts = masked_cosine_sums(a, b)
    assert sums.dtype == torch.float64 and sums.item() < 1.0 and counts.tolist() == [1]
