"""Pinned behaviour of ``training/objectives.py``: the relation KL runs by the implementation
the config names (``impl``), not the kernel's automatic choice."""

from __future__ import annotations

import pytest
import torch

import longred_bench.training.objectives as objectives
from longred_bench.kernels import relation_kl
from longred_bench.training.objectives import relation_kl_loss


@pytest.mark.parametrize("impl", ["naive", "chunked"])
def test_the_relation_kl_runs_by_the_named_implementation(
    monkeypatch: pytest.MonkeyPatch, impl: str
) -> None:
    """The kernel is asked for ``impl`` with the causal mean over real rows; its value is the
    loss."""
    asked = []

    def recording(*args, **kwargs):
        asked.append({k: kwargs.get(k) for k in ("impl", "causal", "reduction")})
        return relation_kl(*args, **kwargs)

    monkeypatch.setattr(objectives, "relation_kl", recording)
    gen = torch.Generator().manual_seed(0)
    student, teacher = (
        torch.randn(1, 2, 5, 4, generator=gen),
        torch.randn(1, 2, 5, 4, generator=gen),
    )
    got = relation_kl_loss(student, teacher, None, impl=impl)
    assert asked == [{"impl": impl, "causal": True, "reduction": "mean"}]
    expected = relation_kl(student, student, teacher, teacher, impl="naive")
    assert float(got) == pytest.approx(float(expected), rel=1e-5)
