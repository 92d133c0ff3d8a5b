"""Pinned behaviour of ``training/lm_loss.py``: the resolved ``lm_loss`` (``chunked`` or
``liger``) is the implementation the output projection's cross-entropy runs, not the kernel's
own automatic choice, and the model's logits during that call are an empty tensor."""

from __future__ import annotations

import pytest
import torch
from train_helpers import tiny_llama

import longred_bench.training.lm_loss as lm_loss_module
from longred_bench.kernels.linear_ce import linear_cross_entropy
from longred_bench.training.lm_loss import lm_loss


@pytest.mark.parametrize("impl", ["chunked", "liger"])
def test_the_head_computes_its_loss_by_the_resolved_implementation(
    monkeypatch: pytest.MonkeyPatch, impl: str
) -> None:
    """The head's cross-entropy is asked for ``impl`` itself (computed here by the chunked
    kernel, which runs on the CPU) and its value is the loss returned."""
    asked = []

    def recording(hidden, weight, target, **kwargs):
        asked.append(kwargs.get("impl", "auto"))
        return linear_cross_entropy(hidden, weight, target, impl="chunked")

    monkeypatch.setattr(lm_loss_module, "linear_cross_entropy", recording)
    model = tiny_llama()
    ids = torch.randint(0, 257, (2, 6), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        got = lm_loss(model, ids, None, impl=impl)
        plain = lm_loss(model, ids, None, impl="plain")
    assert asked == [impl]
    assert float(got) == pytest.approx(float(plain), rel=1e-5)


def test_the_model_returns_no_logits_while_its_head_computes_the_loss() -> None:
    """Inside the loss call the model's logits are an empty ``[rows, tokens, 0]`` tensor: no
    vocabulary-wide output is made; the loss is the plain CE of the shifted targets."""
    model = tiny_llama()
    ids = torch.randint(0, 257, (2, 6), generator=torch.Generator().manual_seed(1))
    target = lm_loss_module.shifted_targets(ids, None)
    with torch.no_grad():
        with lm_loss_module._head_computes_loss(model, target, "chunked") as box:
            logits = model(ids).logits
        plain = lm_loss(model, ids, None, impl="plain")
    assert logits.shape == (2, 6, 0)
    assert float(box["loss"]) == pytest.approx(float(plain), rel=1e-5)
