"""What :class:`~longred_bench.evaluation.config.EvalConfig` accepts and refuses at the edges
of its checks: zero few-shot examples, token lengths, RULER-only lengths and dynamic NTK on
each backend."""

from __future__ import annotations

import pytest

from longred_bench.errors import UserError
from longred_bench.evaluation.config import EvalConfig


def test_zero_few_shot_examples_is_a_setting() -> None:
    """``num_fewshot=0`` is accepted (zero-shot); below 0 is refused."""
    assert EvalConfig(model="tiny-random", num_fewshot=0).num_fewshot == 0
    with pytest.raises(UserError, match="--num-fewshot must be 0 or more"):
        EvalConfig(model="tiny-random", num_fewshot=-1)


@pytest.mark.parametrize("lengths", [(), [], (0,), (64, 0), (-8,)])
def test_lengths_must_be_positive_token_counts(lengths) -> None:
    """An empty list of lengths, or one with a length below 1, is refused in one line."""
    with pytest.raises(UserError, match="--lengths must be positive token counts"):
        EvalConfig(model="tiny-random", suite="ppl", lengths=lengths)


def test_only_ruler_lengths_are_held_to_rulers_list() -> None:
    """Any positive length is a ppl or niah length; RULER takes only its own lengths."""
    assert EvalConfig(model="tiny-random", suite="ppl", lengths=(100, 3)).lengths == (100, 3)
    assert EvalConfig(model="tiny-random", suite="niah", lengths=[100]).lengths == (100,)
    with pytest.raises(UserError, match="RULER lengths"):
        EvalConfig(model="tiny-random", suite="ruler", lengths=(100,))


def test_dynamic_ntk_is_refused_on_vllm_only() -> None:
    """Dynamic NTK runs on the hf backend; on vLLM it is refused."""
    cfg = EvalConfig(model="tiny-random", rope="dynamic:factor=2")
    assert (cfg.rope, cfg.backend) == ("dynamic:factor=2", "hf")
    with pytest.raises(UserError, match="dynamic NTK"):
        EvalConfig(model="tiny-random", rope="dynamic:factor=2", backend="vllm")
    assert EvalConfig(model="tiny-random", rope="pi:factor=2", backend="vllm").backend == "vllm"
