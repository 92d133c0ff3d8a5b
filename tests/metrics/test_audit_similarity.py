"""The token cosine's gradient, which the LongReD distillation loss trains on, against its
closed form, and the masked sums against a plain loop."""

import torch

from longred_bench.metrics.similarity import masked_cosine_sums, token_cosine
from longred_bench.training.objectives import hidden_cosine_loss


def test_the_cosine_gradient_is_its_closed_form() -> None:
    """d cos(a, b) / d a = b / (|a| |b|) - cos(a, b) a / |a|^2."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(5, 7, dtype=torch.float64, generator=g, requires_grad=True)
    b = torch.randn(5, 7, dtype=torch.float64, generator=g)
    token_cosine(a, b).sum().backward()
    x = a.detach()
    na, nb = x.norm(dim=-1, keepdim=True), b.norm(dim=-1, keepdim=True)
    cos = (x * b).sum(-1, keepdim=True) / (na * nb)
    torch.testing.assert_close(a.grad, b / (na * nb) - cos * x / na**2)


def test_the_distillation_loss_gradient_is_that_of_one_minus_the_mean_cosine() -> None:
    g = torch.Generator().manual_seed(1)
    student = torch.randn(2, 4, 6, dtype=torch.float64, generator=g, requires_grad=True)
    teacher = torch.randn(2, 4, 6, dtype=torch.float64, generator=g)
    mask = torch.tensor([[True, True, False, True], [False, True, True, True]])
    hidden_cosine_loss([student], [teacher], mask).backward()
    x = student.detach().clone().requires_grad_(True)
    cos = torch.nn.functional.cosine_similarity(x, teacher, dim=-1)
    (1 - cos[mask].mean()).backward()
    torch.testing.assert_close(student.grad, x.grad)


def test_masked_cosine_sums_equal_a_loop_over_tokens() -> None:
    g = torch.Generator().manual_seed(2)
    a, b = torch.randn(3, 5, 4, generator=g), torch.randn(3, 5, 4, generator=g)
    mask = torch.rand(3, 5, generator=g) > 0.4
    sums, counts = masked_cosine_sums(a, b, mask)
    for i in range(3):
        kept = [j for j in range(5) if mask[i, j]]
        want = sum(
            float(torch.nn.functional.cosine_similarity(a[i, j].double(), b[i, j].double(), dim=0))
            for j in kept
        )
        assert abs(float(sums[i]) - want) < 1e-12 and int(counts[i]) == len(kept)
