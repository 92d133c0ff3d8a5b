"""The ppl suite's lengths (``evaluation.ppl``), from their docstrings: 1,024-token position
buckets, or 8 a window below 8,192 tokens; a suite's default length is the largest power of
two not above the window."""

from __future__ import annotations

from longred_bench.evaluation.ppl import pow2_floor, ppl_bucket


def test_buckets_are_1024_tokens_or_an_eighth_of_a_shorter_window() -> None:
    assert [ppl_bucket(n) for n in (16384, 8192, 4096, 2048, 4)] == [1024, 1024, 512, 256, 1]


def test_the_default_length_is_the_largest_power_of_two_not_above_the_window() -> None:
    assert [pow2_floor(n) for n in (1, 2, 3, 8, 1000, 1024, 8192)] == [1, 2, 2, 8, 512, 1024, 8192]
