"""``longred_bench.kernels.linear_ce``: the chunked linear cross-entropy against the plain
reference (whole logits, ``F.cross_entropy``), forward and backward, in fp64 at odd sizes, with
ignored targets, rows longer than one chunk and a ``grad_output`` other than 1."""

from __future__ import annotations

import pytest
import torch

from longred_bench.kernels.linear_ce import (
    IGNORE_INDEX,
    default_chunk_rows,
    liger_available,
    linear_cross_entropy,
    linear_cross_entropy_chunked,
    linear_cross_entropy_reference,
    resolve_linear_ce_impl,
)

F64 = torch.float64


def make_inputs(rows=37, dim=16, vocab=257, dtype=F64, ignored=(3, 10, 36), seed=0):
    gen = torch.Generator().manual_seed(seed)
    hidden = torch.randn(rows, dim, generator=gen, dtype=F64).to(dtype).requires_grad_(True)
    weight = torch.randn(vocab, dim, generator=gen, dtype=F64).mul(0.5).to(dtype)
    target = torch.randint(0, vocab, (rows,), generator=gen)
    target[list(ignored)] = IGNORE_INDEX
    return hidden, weight.requires_grad_(True), target


def loss_and_grads(fn, hidden, weight, target, scale=1.0, **kwargs):
    loss = fn(hidden, weight, target, **kwargs)
    grads = torch.autograd.grad(loss * scale, (hidden, weight))
    return loss.detach(), grads


@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("chunk_rows", [1, 5, 37, 64])
def test_chunked_equals_the_reference_in_fp64(reduction: str, chunk_rows: int) -> None:
    hidden, weight, target = make_inputs()
    ref, ref_grads = loss_and_grads(
        linear_cross_entropy_reference, hidden, weight, target, 2.5, reduction=reduction
    )
    got, grads = loss_and_grads(
        linear_cross_entropy_chunked, hidden, weight, target, 2.5,
        reduction=reduction, chunk_rows=chunk_rows,
    )  # fmt: skip
    torch.testing.assert_close(got, ref, rtol=1e-12, atol=1e-12)
    for g, r in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(g, r, rtol=1e-10, atol=1e-12)


def test_the_reference_is_the_mean_of_per_row_log_softmax() -> None:
    hidden, weight, target = make_inputs(rows=7, vocab=11, ignored=(2,))
    logp = torch.log_softmax(hidden @ weight.t(), dim=-1)
    rows = [-logp[i, target[i]] for i in range(7) if target[i] != IGNORE_INDEX]
    expected = torch.stack(rows).mean()
    got = linear_cross_entropy_reference(hidden, weight, target)
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=0)


def test_ignored_rows_get_no_loss_and_no_gradient() -> None:
    hidden, weight, target = make_inputs()
    _, (grad_h, _) = loss_and_grads(linear_cross_entropy_chunked, hidden, weight, target, 1.0,
                                    chunk_rows=8)  # fmt: skip
    assert grad_h[[3, 10, 36]].abs().max() == 0
    assert grad_h[[0, 1, 2]].abs().max() > 0


def test_all_rows_ignored_gives_zero() -> None:
    hidden, weight, target = make_inputs(rows=5, ignored=range(5))
    loss, (grad_h, grad_w) = loss_and_grads(linear_cross_entropy_chunked, hidden, weight, target)
    assert loss.item() == 0 and grad_h.abs().max() == 0 and grad_w.abs().max() == 0


def test_fp32_matches_the_reference_to_one_part_in_a_million() -> None:
    hidden, weight, target = make_inputs(rows=300, dim=64, vocab=1031, dtype=torch.float32)
    ref, ref_grads = loss_and_grads(linear_cross_entropy_reference, hidden, weight, target)
    got, grads = loss_and_grads(linear_cross_entropy_chunked, hidden, weight, target,
                                chunk_rows=97)  # fmt: skip
    assert abs(got - ref) <= 1e-6 * abs(ref)
    for g, r in zip(grads, ref_grads, strict=True):
        assert (g - r).norm() <= 1e-6 * r.norm()


def test_frozen_weight_gets_no_gradient_and_no_grad_mode_computes_only_the_loss() -> None:
    hidden, weight, target = make_inputs()
    weight.requires_grad_(False)
    loss = linear_cross_entropy_chunked(hidden, weight, target, chunk_rows=4)
    (grad_h,) = torch.autograd.grad(loss, (hidden,))
    assert grad_h.shape == hidden.shape
    with torch.no_grad():
        again = linear_cross_entropy_chunked(hidden, weight, target, chunk_rows=4)
    assert not again.requires_grad and again.item() == pytest.approx(loss.item(), rel=1e-12)


def test_bf16_autocast_error_is_within_twice_the_plain_forms() -> None:
    # Both forms make the logits in bf16 under autocast; against the fp64 result the chunked
    # form's error must not exceed twice the plain form's (plus bf16 rounding of one value).
    hidden, weight, target = make_inputs(rows=41, dim=32, vocab=263, dtype=torch.float32)
    exact, exact_grads = loss_and_grads(
        linear_cross_entropy_reference, hidden.double(), weight.double(), target
    )
    with torch.autocast("cpu", dtype=torch.bfloat16):
        plain, plain_grads = loss_and_grads(linear_cross_entropy_reference, hidden, weight, target)
        got, grads = loss_and_grads(linear_cross_entropy_chunked, hidden, weight, target,
                                    chunk_rows=16)  # fmt: skip
    assert grads[0].dtype == torch.float32 and grads[1].dtype == torch.float32
    assert abs(got.double() - exact) <= 2 * abs(plain.double() - exact) + 1e-2
    for g, p, e in zip(grads, plain_grads, exact_grads, strict=True):
        assert (g.double() - e).norm() <= 2 * (p.double() - e).norm() + 1e-3 * e.norm()


def test_dispatch_and_argument_errors() -> None:
    hidden, weight, target = make_inputs()
    assert resolve_linear_ce_impl("auto", "cpu") == "chunked"
    assert resolve_linear_ce_impl("plain", "cpu") == "plain"
    plain = linear_cross_entropy(hidden, weight, target, impl="plain")
    auto = linear_cross_entropy(hidden, weight, target, impl="auto")
    torch.testing.assert_close(auto, plain, rtol=1e-12, atol=0)
    with pytest.raises(ValueError, match="impl must be one of"):
        linear_cross_entropy(hidden, weight, target, impl="fast")
    with pytest.raises(ValueError, match="target"):
        linear_cross_entropy(hidden, weight, target[:-1])
    with pytest.raises(ValueError, match="reduction"):
        linear_cross_entropy(hidden, weight, target, reduction="none")
    with pytest.raises(ValueError, match="chunk_rows"):
        linear_cross_entropy_chunked(hidden, weight, target, chunk_rows=0)
    if not liger_available():
        with pytest.raises(ImportError, match="liger-kernel"):
            linear_cross_entropy(hidden, weight, target, impl="liger")


def test_default_chunk_rows_bound_the_chunk_logits() -> None:
    assert default_chunk_rows(100, 50_000) == 100
    rows = default_chunk_rows(1_000_000, 128_256)
    assert rows * 128_256 * 4 <= 256 * 2**20 < (rows + 1) * 128_256 * 4


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("impl", ["chunked", "liger"])
def test_cuda_bf16_matches_the_plain_form(impl: str) -> None:
    if impl == "liger" and not liger_available():
        pytest.skip("liger-kernel is not installed")
    hidden, weight, target = make_inputs(rows=1031, dim=256, vocab=4099, dtype=torch.float32)
    hidden = hidden.detach().cuda().bfloat16().requires_grad_(True)
    weight = weight.detach().cuda().bfloat16().requires_grad_(True)
    target = target.cuda()
    exact, exact_grads = loss_and_grads(
        linear_cross_entropy_reference, hidden.double(), weight.double(), target
    )
    plain, plain_grads = loss_and_grads(linear_cross_entropy_reference, hidden, weight, target)
    got, grads = loss_and_grads(linear_cross_entropy, hidden, weight, target, impl=impl)
    assert abs(got.double() - exact) <= 2 * abs(plain.double() - exact) + 1e-2
    for g, p, e in zip(grads, plain_grads, exact_grads, strict=True):
        assert (g.double() - e).norm() <= 2 * (p.double() - e).norm() + 1e-3 * e.norm()
