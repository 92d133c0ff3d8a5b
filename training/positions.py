"""Skipped position ids for short-to-long distillation (LongReD-U and LongReD-C).

The student reads a text of the original window ``T`` with position ids spread over the target
window ``Ls = f * T`` while the teacher reads the same text at ``0 .. T-1``. Each row is three
runs of consecutive ids::

    head: [0, head)   mid: [end - chunk, end)   tail: [Ls - tail, Ls)

with ``head = tail``, either ``T // 3`` or ``4 f`` (one fair draw per call, shared by the batch),
and ``chunk = T - head - tail``. ``end`` is EXCLUSIVE and drawn per row:

- ``uniform`` (LongReD-U): ``end ~ U{T - tail, Ls - tail}``. The lower bound is the un-skipped
  layout of head and mid (ids ``0 .. T-tail-1``), the upper one puts mid right before the tail.
  (The reference code draws an inclusive end on ``{T - tail, Ls - tail - 1}``, i.e. exclusive
  ``{T - tail + 1, Ls - tail}``: one id shorter at the bottom, never the un-skipped layout.)
- ``cream`` (LongReD-C, CREAM's middle-focused scheme): a scale ``r`` from the truncated Gaussian
  on ``[2, 2f]`` with mean ``1 + f`` and std ``cream_sigma``, then
  ``end ~ U{head + floor((chunk - 1) r / 2) + 1, floor(r T / 2) - tail}``, clamped into the
  uniform range. ``r = 2`` gives the un-skipped layout, ``r = 2f`` the uniform upper range.
  ``r`` stays real-valued (the reference floors it to an integer) and its CDF is normalised on
  ``[2, 2f]`` (the reference's is not, which piles mass on ``r = 2`` and ``r = 2f``).

Every row is strictly increasing and inside ``[0, Ls)``. All draws come from ``generator`` (CPU),
so one seed gives the same ids.
"""

from __future__ import annotations

import math

import torch

from longred_bench.errors import UserError

SAMPLERS = ("uniform", "cream")


def truncated_normal(
    mean: float,
    sigma: float,
    low: float,
    high: float,
    size: int | tuple[int, ...],
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Samples of N(mean, sigma^2) truncated to ``[low, high]``: float64 tensor of shape ``size``.

    Inverse CDF with the normalisation: ``u ~ U(Phi(a), Phi(b))``, ``x = mean + sigma Phi^-1(u)``
    with ``a = (low - mean) / sigma`` and ``b = (high - mean) / sigma``, in fp64. An interval in
    the upper tail is sampled as the mirror of the lower one, where ``Phi`` keeps its precision.
    """
    if not (sigma > 0 and math.isfinite(sigma)):
        raise UserError(f"truncated normal needs a finite sigma > 0 (got {sigma})")
    if not (low < high):
        raise UserError(f"truncated normal needs low < high (got [{low}, {high}])")
    if low > mean:  # upper tail: sample -x from N(-mean) on [-high, -low], then negate
        return -truncated_normal(-mean, sigma, -high, -low, size, generator)
    shape = (size,) if isinstance(size, int) else tuple(size)
    bounds = torch.tensor([(low - mean) / sigma, (high - mean) / sigma], dtype=torch.float64)
    # 0.5 erfc(-z / sqrt 2) keeps its precision far in the lower tail, torch's ndtr does not
    cdf_lo, cdf_hi = (0.5 * torch.special.erfc(-bounds / math.sqrt(2.0))).tolist()
    u = torch.rand(shape, generator=generator, dtype=torch.float64)
    x = mean + sigma * torch.special.ndtri(cdf_lo + u * (cdf_hi - cdf_lo))
    return x.clamp(low, high)


def _uniform_int(
    lo: torch.Tensor, hi: torch.Tensor, generator: torch.Generator | None
) -> torch.Tensor:
    """One integer per element, uniform on ``{lo, ..., hi}`` (inclusive; ``lo <= hi``)."""
    u = torch.rand(lo.shape, generator=generator, dtype=torch.float64)
    return torch.minimum(lo + torch.floor(u * (hi - lo + 1).double()).long(), hi)


def _check(original_window: int, target_window: int, batch: int, sampler: str, sigma: float) -> int:
    """Validate the arguments; return the factor ``f``."""
    if sampler not in SAMPLERS:
        raise UserError(
            f"unknown position sampler {sampler!r}; choose one of {', '.join(SAMPLERS)}"
        )
    if sampler == "cream" and not (sigma > 0 and math.isfinite(sigma)):
        raise UserError(f"cream_sigma must be a finite number > 0 (got {sigma})")
    if batch < 1:
        raise UserError(f"skipped position ids need batch >= 1 (got {batch})")
    if (
        original_window < 1
        or target_window % original_window
        or target_window < 2 * original_window
    ):
        raise UserError(
            f"target window {target_window} must be a multiple >= 2 of the original window "
            f"{original_window}: set the target to f * original with f >= 2"
        )
    f = target_window // original_window
    small, large = sorted((original_window // 3, 4 * f))
    if small < 1 or original_window - 2 * large < 1:
        raise UserError(
            f"original window {original_window} is too short for head = tail = "
            f"{original_window // 3} or {4 * f} plus a middle chunk: use a window above {8 * f}"
        )
    return f


def skipped_position_ids(
    original_window: int,
    target_window: int,
    batch: int,
    *,
    sampler: str = "uniform",
    generator: torch.Generator | None = None,
    cream_sigma: float = 3.0,
) -> torch.Tensor:
    """Student position ids ``[batch, original_window]`` (long) spread over ``target_window``.

    ``sampler`` is ``uniform`` or ``cream`` and ``cream_sigma`` the std of CREAM's scale ``r``
    (3.0 as in CREAM; the LongReD code uses 5); see the module docstring for the layout.
    """
    f = _check(original_window, target_window, batch, sampler, cream_sigma)
    t, ls = original_window, target_window
    pick_third = bool(torch.rand((), generator=generator, dtype=torch.float64) < 0.5)
    head = t // 3 if pick_third else 4 * f
    tail, chunk = head, t - 2 * head
    lo_min, hi_max = t - tail, ls - tail
    if sampler == "uniform":
        lo = torch.full((batch,), lo_min, dtype=torch.long)
        hi = torch.full((batch,), hi_max, dtype=torch.long)
    else:
        r = truncated_normal(1.0 + f, cream_sigma, 2.0, 2.0 * f, batch, generator)
        lo = (head + torch.floor((chunk - 1) * r / 2)).long() + 1
        hi = torch.floor(r * t / 2).long() - tail
        lo, hi = lo.clamp(lo_min, hi_max), hi.clamp(lo_min, hi_max)
        lo = torch.minimum(lo, hi)
    end = _uniform_int(lo, hi, generator)
    mid = (end - chunk).unsqueeze(1) + torch.arange(chunk)
    return torch.cat(
        [
            torch.arange(head).expand(batch, head),
            mid,
            torch.arange(ls - tail, ls).expand(batch, tail),
        ],
        dim=1,
    )
