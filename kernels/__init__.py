"""Attention-relation KL kernels: ``relation_kl`` and the implementations it dispatches to.

``relation_kl`` computes KL(P_t || P_s) between row-softmaxed relation matrices
``P = softmax(scale * A B^T)`` of a teacher and a student (e.g. LinearARD's Q/K, Q/Q and K/K
relations).  Implementations:

* ``"naive"``: :mod:`.reference`, materialised scores; the reference for tests.
* ``"chunked"``: :mod:`.chunked`, row blocks and a custom backward, linear memory.
* ``"triton"``: ``kernels/triton_impl.py`` (``relation_kl_triton``), imported only when used.
* ``"stats"``: :mod:`.attention_stats`, forward only on CPU: three fused (flash) attention calls
  whose outputs and log-sum-exps give the KL without any score block; ``ValueError`` when a
  gradient is needed.
* ``"auto"``: Triton for CUDA inputs when it imports, chunked otherwise.

``linear_cross_entropy`` (:mod:`.linear_ce`) is the language-model loss without whole logits:
the plain reference, a chunked PyTorch form, and Liger-Kernel's fused kernel where installed.

Argument validation shared by all of them is :func:`._common.prepare_relation_kl_args`.
``kernels/triton_compile.py`` compiles the Triton kernels for a GPU target without a GPU.
"""

from __future__ import annotations

import importlib

import torch

from ._common import (
    MASK_VALUE,
    REDUCTIONS,
    RelationKLArgs,
    at_common_dtype,
    count_valid_rows,
    prepare_relation_kl_args,
    reduce_row_kl,
)
from .attention_stats import (
    TeacherTerms,
    attention_with_lse,
    relation_kl_stats,
    stats_supported,
    teacher_terms,
)
from .chunked import relation_kl_chunked
from .linear_ce import (
    LINEAR_CE_IMPLS,
    linear_cross_entropy,
    linear_cross_entropy_chunked,
    linear_cross_entropy_reference,
)
from .reference import relation_kl_naive

IMPLS = ("auto", "naive", "chunked", "triton", "stats")
_TRITON_MODULE = "longred_bench.kernels.triton_impl"

__all__ = [
    "IMPLS",
    "LINEAR_CE_IMPLS",
    "MASK_VALUE",
    "REDUCTIONS",
    "RelationKLArgs",
    "TeacherTerms",
    "at_common_dtype",
    "attention_with_lse",
    "count_valid_rows",
    "linear_cross_entropy",
    "linear_cross_entropy_chunked",
    "linear_cross_entropy_reference",
    "prepare_relation_kl_args",
    "reduce_row_kl",
    "relation_kl",
    "relation_kl_chunked",
    "relation_kl_naive",
    "relation_kl_stats",
    "stats_supported",
    "teacher_terms",
]


def _load_triton_impl():
    """Import ``relation_kl_triton`` lazily; raises ``ImportError`` with a one-line message."""
    try:
        module = importlib.import_module(_TRITON_MODULE)
        return module.relation_kl_triton
    except (ImportError, AttributeError) as err:
        raise ImportError(
            f"relation_kl impl='triton' needs the triton package installed (and a CUDA device); "
            f"importing {_TRITON_MODULE} failed: {err}"
        ) from err


def _autocast_inputs(*tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """``tensors`` with their fp32 ones in the dtype of the autocast on for their device."""
    dtype = torch.get_autocast_dtype(tensors[0].device.type)
    return tuple(
        x.to(dtype) if isinstance(x, torch.Tensor) and x.dtype == torch.float32 else x
        for x in tensors
    )


def relation_kl(
    a_s: torch.Tensor,
    b_s: torch.Tensor,
    a_t: torch.Tensor,
    b_t: torch.Tensor,
    *,
    mask: torch.Tensor | None = None,
    causal: bool = True,
    scale_s: float | None = None,
    scale_t: float | None = None,
    reduction: str = "mean",
    impl: str = "auto",
) -> torch.Tensor:
    """KL(P_t || P_s) where ``P = row-softmax(scale * A B^T)`` over valid columns.

    Teacher is ``(a_t, b_t, scale_t)``, student ``(a_s, b_s, scale_s)``.

    Shapes: ``a_*`` ``[batch, query_heads, seq, head_dim_*]``; ``b_*`` ``[batch, kv_heads_*,
    seq, head_dim_*]`` with ``query_heads`` a multiple of ``kv_heads_*`` (query head ``h`` uses
    kv head ``h // (query_heads // kv_heads_*)``); ``mask`` ``[batch, seq]`` bool or 0/1, True
    for real tokens.  Row ``i`` is valid iff ``mask[i]``; column ``j`` is valid for row ``i``
    iff ``mask[j]`` and (``j <= i`` when ``causal``).  ``scale_*`` defaults to
    ``head_dim_* ** -0.5``.

    Returns per-row KL ``[batch, query_heads, seq]`` for ``reduction="none"`` (0 on masked
    rows), its sum for ``"sum"``, or the mean over valid rows and query heads for ``"mean"``
    (0 when no row is valid).  Computed in fp32 (fp64 for fp64 inputs), returned in that dtype;
    gradients come back in the input dtype.  The chunked and Triton paths treat the teacher as
    a constant (no gradient for ``a_t``, ``b_t``); the naive path differentiates everything.
    Under autocast fp32 inputs are first cast to its dtype, as autocast casts a matmul's (the
    rotary step hands q and k over in fp32 there, while the model's attention reads them in
    the lower dtype); the computation then runs outside autocast, in fp32 as above.
    """
    if impl not in IMPLS:
        raise ValueError(f"relation_kl: impl must be one of {', '.join(IMPLS)}; got {impl!r}")
    kind = a_s.device.type if isinstance(a_s, torch.Tensor) else None
    if kind is not None and torch.is_autocast_enabled(kind):  # its dtype, then fp32 as always
        a_s, b_s, a_t, b_t = _autocast_inputs(a_s, b_s, a_t, b_t)
        with torch.autocast(kind, enabled=False):
            return relation_kl(a_s, b_s, a_t, b_t, mask=mask, causal=causal, scale_s=scale_s,
                               scale_t=scale_t, reduction=reduction, impl=impl)  # fmt: skip
    if impl == "auto":
        impl = "chunked"
        if isinstance(a_s, torch.Tensor) and a_s.is_cuda:
            try:
                _load_triton_impl()
                impl = "triton"
            except ImportError:
                impl = "chunked"
    kwargs = dict(
        mask=mask,
        causal=causal,
        scale_s=scale_s,
        scale_t=scale_t,
        reduction=reduction,
    )
    if impl == "naive":
        return relation_kl_naive(a_s, b_s, a_t, b_t, **kwargs)
    if impl == "chunked":
        return relation_kl_chunked(a_s, b_s, a_t, b_t, **kwargs)
    if impl == "stats":
        return relation_kl_stats(a_s, b_s, a_t, b_t, **kwargs)
    triton_fn = _load_triton_impl()
    return triton_fn(a_s, b_s, a_t, b_t, mask, causal, scale_s, scale_t, reduction)
