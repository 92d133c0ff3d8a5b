"""``longred_bench.metrics.psa.answer_scores``: the sample's probability is the gold step's, the
mean probability is over every answer token, and an answer with no token holding a letter or
digit is scored at its first token."""

from __future__ import annotations

import math

import pytest
import torch

from longred_bench.metrics.psa import answer_scores

# Gold probabilities 0.75, 1/3 and 1/2 (softmax of two logits); ranks 1, 2 and 1 (a tie with
# the gold token does not push it down).
LOGITS = torch.tensor([[0.0, math.log(3.0)], [math.log(2.0), 0.0], [0.0, 0.0]])
GOLD = torch.tensor([1, 1, 0])


def test_the_sample_probability_is_the_gold_steps_and_the_mean_covers_every_token() -> None:
    summary, tokens = answer_scores(LOGITS, GOLD, [" ", "7", "x"])
    assert summary["gold_step"] == 1 and summary["rank"] == 2
    assert summary["probability"] == pytest.approx(1.0 / 3.0, abs=1e-6)
    assert summary["reciprocal_rank"] == pytest.approx(0.5)
    assert summary["mean_probability_all"] == pytest.approx((0.75 + 1 / 3 + 0.5) / 3, abs=1e-6)
    assert [t["probability"] for t in tokens] == pytest.approx([0.75, 1 / 3, 0.5], abs=1e-6)


def test_an_answer_without_a_content_token_is_scored_at_its_first_token() -> None:
    summary, tokens = answer_scores(LOGITS, GOLD, [" ", ".", "!"])
    assert summary["gold_step"] == 0 and summary["rank"] == 1
    assert summary["probability"] == pytest.approx(0.75, abs=1e-6)
    assert [t["gold_step"] for t in tokens] == [True, False, False]
