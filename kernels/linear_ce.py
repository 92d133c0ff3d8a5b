"""Linear cross-entropy: the CE of ``hidden @ weight^T`` against targets, without whole logits.

A language model's loss is ``cross_entropy(hidden @ weight^T, target)``; at a long row the
logits ``[rows, vocab]`` (and their gradient) are the largest tensors of a training step: one
32,768-token row of a 128K vocabulary is 16 GiB in fp32. Implementations:

* :func:`linear_cross_entropy_reference`: the plain form, whole logits and ``F.cross_entropy``;
  the reference the tests and benchmarks compare with (one copy of the math).
* :func:`linear_cross_entropy_chunked`: rows in chunks; each chunk's logits are made, turned
  into its loss and its gradients (``d hidden`` for its rows, added into ``d weight``) and
  dropped, all in the forward pass (softmax and gradient in place of the logits); the backward
  pass scales the stored gradients. Peak extra memory is one chunk's logits, the fp32 weight
  gradient and the hidden-state gradient, not the whole logits. The CPU path, and CUDA's where
  no fused kernel is installed.
* ``impl="liger"``: Liger-Kernel's fused Triton kernel
  (``liger_kernel.transformers.functional.liger_fused_linear_cross_entropy``), an optional
  library used as it is, on CUDA only.
* :func:`linear_cross_entropy` dispatches (``auto``: Liger on CUDA when it imports, chunked
  otherwise).

Precision: logits are made in the compute dtype (autocast's where it is on, else that of the
inputs), softmax and loss in fp32, the weight gradient accumulated in fp32 and returned in the
weight's dtype.
"""

from __future__ import annotations

import functools
import importlib

import torch
import torch.nn.functional as F

IGNORE_INDEX = -100
LINEAR_CE_IMPLS = ("auto", "plain", "chunked", "liger")
_LIGER = "liger_kernel.transformers.functional"
CHUNK_BYTES = 256 * 2**20  # one chunk's fp32 logits at most (the rows adapt to the vocabulary)


def default_chunk_rows(rows: int, vocab: int) -> int:
    """Rows per chunk: as many as keep one chunk's fp32 logits within :data:`CHUNK_BYTES`."""
    return max(1, min(rows, CHUNK_BYTES // (4 * vocab)))


def _check(hidden: torch.Tensor, weight: torch.Tensor, target: torch.Tensor, reduction: str):
    if hidden.dim() != 2 or weight.dim() != 2 or hidden.shape[1] != weight.shape[1]:
        raise ValueError(
            f"linear_cross_entropy: hidden [rows, dim] and weight [vocab, dim] expected, got "
            f"{tuple(hidden.shape)} and {tuple(weight.shape)}"
        )
    if target.shape != hidden.shape[:1]:
        raise ValueError(
            f"linear_cross_entropy: target [{hidden.shape[0]}] expected, got {tuple(target.shape)}"
        )
    if reduction not in ("sum", "mean"):
        raise ValueError(f"linear_cross_entropy: reduction must be sum or mean, got {reduction!r}")


def linear_cross_entropy_reference(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    target: torch.Tensor,
    *,
    ignore_index: int = IGNORE_INDEX,
    reduction: str = "mean",
) -> torch.Tensor:
    """``cross_entropy(hidden @ weight^T, target)`` with the whole logits, softmax in fp32.

    ``hidden [rows, dim]``, ``weight [vocab, dim]``, ``target [rows]`` (``ignore_index``: no
    loss). ``reduction``: ``sum`` over counted rows, or their ``mean`` (0 when none counts).
    """
    _check(hidden, weight, target, reduction)
    logits = _at_least_fp32(hidden @ weight.t())
    total = F.cross_entropy(logits, target, ignore_index=ignore_index, reduction="sum")
    if reduction == "sum":
        return total
    return total / (target != ignore_index).sum().clamp_min(1)


def _at_least_fp32(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.promote_types(x.dtype, torch.float32))


def _compute_dtype(hidden: torch.Tensor, weight: torch.Tensor) -> torch.dtype:
    device = hidden.device.type
    if torch.is_autocast_enabled(device):
        return torch.get_autocast_dtype(device)
    return torch.promote_types(hidden.dtype, weight.dtype)


class _ChunkedLinearCE(torch.autograd.Function):
    """Loss and gradients chunk by chunk in the forward pass; backward scales them."""

    @staticmethod
    def forward(ctx, hidden, weight, target, ignore_index, reduction, chunk_rows, grad_enabled):
        rows, vocab = hidden.shape[0], weight.shape[0]
        dtype = _compute_dtype(hidden, weight)
        acc = torch.promote_types(dtype, torch.float32)
        need_h = grad_enabled and ctx.needs_input_grad[0]
        need_w = grad_enabled and ctx.needs_input_grad[1]
        valid = target != ignore_index
        count = valid.sum()
        scale = 1.0 / count.clamp_min(1).to(acc) if reduction == "mean" else None
        grad_h = torch.empty_like(hidden) if need_h else None
        grad_w = None
        if need_w:
            grad_w = torch.zeros(weight.shape, dtype=acc, device=weight.device)
        total = torch.zeros((), dtype=acc, device=hidden.device)
        w = weight.to(dtype)
        step = chunk_rows or default_chunk_rows(rows, vocab)
        with torch.autocast(hidden.device.type, enabled=False):
            for start in range(0, rows, step):
                h = hidden[start : start + step].to(dtype)
                ok = valid[start : start + step]
                picked = torch.where(ok, target[start : start + step], 0)
                logits = (h @ w.t()).to(acc)
                own = logits.gather(1, picked[:, None]).squeeze(1)
                # log-sum-exp in place of the logits (no second chunk-sized block), which then
                # hold the softmax: d loss / d logits = softmax - one-hot, on counted rows.
                top = logits.amax(dim=-1)
                grad = logits.sub_(top[:, None]).exp_()
                norm = grad.sum(dim=-1)
                lse = top + norm.log()
                total += torch.where(ok, lse - own, 0.0).sum()
                if not (need_h or need_w):
                    del logits, grad  # before the next chunk's block is made
                    continue
                grad /= norm[:, None]
                grad[torch.arange(len(picked), device=grad.device), picked] -= 1.0
                grad *= ok[:, None]
                if scale is not None:
                    grad *= scale
                grad = grad.to(dtype)
                if need_h:
                    grad_h[start : start + step] = grad @ w
                if need_w:
                    if dtype == acc:
                        grad_w.addmm_(grad.t(), h)
                    else:
                        grad_w += grad.t() @ h
                del logits, grad  # before the next chunk's block is made
        ctx.grads = (grad_h, grad_w)
        ctx.weight_dtype = weight.dtype
        return total * scale if scale is not None else total

    @staticmethod
    def backward(ctx, grad_out):
        if ctx.grads is None:
            raise RuntimeError("linear_cross_entropy_chunked: backward ran twice (retain_graph)")
        grad_h, grad_w = ctx.grads
        # Dropped here, so that autograd can keep the returned gradients as the inputs' .grad
        # instead of copying them (a weight gradient is vocab x dim in fp32).
        ctx.grads = None
        hidden_dtype = None if grad_h is None else grad_h.dtype
        one = bool(torch.all(grad_out == 1))
        if grad_h is not None and not one:
            grad_h = (grad_h * grad_out).to(hidden_dtype)
        if grad_w is not None:
            grad_w = grad_w if one else grad_w * grad_out
            grad_w = grad_w.to(ctx.weight_dtype)
        return grad_h, grad_w, None, None, None, None, None


def linear_cross_entropy_chunked(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    target: torch.Tensor,
    *,
    ignore_index: int = IGNORE_INDEX,
    reduction: str = "mean",
    chunk_rows: int | None = None,
) -> torch.Tensor:
    """As :func:`linear_cross_entropy_reference`, in chunks of ``chunk_rows`` rows (default
    :func:`default_chunk_rows`): never more than one chunk's logits at a time. Differentiable
    in ``hidden`` and ``weight``."""
    _check(hidden, weight, target, reduction)
    if chunk_rows is not None and chunk_rows < 1:
        raise ValueError(f"linear_cross_entropy: chunk_rows must be >= 1, got {chunk_rows}")
    grad_enabled = torch.is_grad_enabled()  # the forward pass itself runs without it
    return _ChunkedLinearCE.apply(
        hidden, weight, target, ignore_index, reduction, chunk_rows, grad_enabled
    )


@functools.cache
def liger_available() -> bool:
    """Whether Liger-Kernel's fused linear CE imports here."""
    try:
        _liger()
    except ImportError:
        return False
    return True


def _liger():
    try:
        return importlib.import_module(_LIGER).liger_fused_linear_cross_entropy
    except (ImportError, AttributeError) as err:
        raise ImportError(
            f"linear_cross_entropy impl='liger' needs the liger-kernel package (and a CUDA "
            f"device); importing {_LIGER} failed: {err}"
        ) from err


def resolve_linear_ce_impl(impl: str, device: torch.device | str) -> str:
    """The implementation ``impl`` stands for on ``device`` (``auto``: Liger on CUDA when it
    imports, else chunked)."""
    if impl not in LINEAR_CE_IMPLS:
        raise ValueError(
            f"linear_cross_entropy: impl must be one of {', '.join(LINEAR_CE_IMPLS)}, got {impl!r}"
        )
    if impl != "auto":
        return impl
    return "liger" if torch.device(device).type == "cuda" and liger_available() else "chunked"


def linear_cross_entropy(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    target: torch.Tensor,
    *,
    ignore_index: int = IGNORE_INDEX,
    reduction: str = "mean",
    impl: str = "auto",
    chunk_rows: int | None = None,
) -> torch.Tensor:
    """``cross_entropy(hidden @ weight^T, target)`` by ``impl`` (``auto``, ``plain``,
    ``chunked``, ``liger``); shapes and reductions as :func:`linear_cross_entropy_reference`."""
    impl = resolve_linear_ce_impl(impl, hidden.device)
    if impl == "plain":
        return linear_cross_entropy_reference(
            hidden, weight, target, ignore_index=ignore_index, reduction=reduction
        )
    if impl == "chunked":
        return linear_cross_entropy_chunked(
            hidden, weight, target, ignore_index=ignore_index, reduction=reduction,
            chunk_rows=chunk_rows,
        )  # fmt: skip
    _check(hidden, weight, target, reduction)
    total = _liger()(hidden, weight, target, ignore_index=ignore_index, reduction="sum")
    if reduction == "sum":
        return total
    return total / (target != ignore_index).sum().clamp_min(1)
