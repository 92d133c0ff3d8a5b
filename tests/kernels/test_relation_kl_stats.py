"""The forward-only CPU attention KL from fused-attention statistics (``impl="stats"``) against
the naive reference: values, fp32 error, exact zero, shared teacher terms, masked rows, refusals."""

from __future__ import annotations

import pytest
import torch
from test_relation_kl import F64, make_inputs, make_mask

from longred_bench.kernels import (
    attention_with_lse,
    relation_kl,
    relation_kl_naive,
    relation_kl_stats,
    stats_supported,
    teacher_terms,
)

# ---------------------------------------------------------------- stats (fused attention) path
STATS_CASES = [
    # seq, causal, heads, kv_s, kv_t, mask_kind
    (37, True, 4, 2, 2, None),
    (37, False, 6, 3, 2, "left"),
    (70, True, 6, 1, 3, "right"),
    (257, True, 4, 2, 1, "dead_row"),
    (257, False, 2, 2, 2, "dead_row"),
]


@pytest.mark.parametrize("seq,causal,heads,kv_s,kv_t,mask_kind", STATS_CASES)
@torch.no_grad()
def test_stats_matches_naive_fp64(seq, causal, heads, kv_s, kv_t, mask_kind) -> None:
    inputs = make_inputs(batch=2, heads=heads, seq=seq, kv_s=kv_s, kv_t=kv_t, d_s=8, d_t=8)
    mask = make_mask(mask_kind, 2, seq)
    kw = dict(mask=mask, causal=causal, scale_s=0.5, scale_t=0.3)
    ref = relation_kl_naive(*inputs, reduction="none", **kw)
    got = relation_kl(*inputs, reduction="none", impl="stats", **kw)
    assert got.dtype == F64
    torch.testing.assert_close(got, ref, rtol=0, atol=1e-11)
    for reduction in ("sum", "mean"):
        want = relation_kl_naive(*inputs, reduction=reduction, **kw)
        torch.testing.assert_close(
            relation_kl_stats(*inputs, reduction=reduction, **kw), want, rtol=1e-12, atol=1e-12
        )


@pytest.mark.parametrize("causal", [True, False])
@torch.no_grad()
def test_stats_fp32_error_close_to_naive_fp32_error(causal: bool) -> None:
    """Flash-attention's rule: fp32 row error <= 2x naive fp32's against fp64 (measured 0.8-1.3x
    over seeds 0-3 here; on SmolLM2 layers at n=2048 rows err by a few 1e-6)."""
    inputs64 = make_inputs(batch=2, heads=4, seq=300, kv_s=2, kv_t=1, d_s=16, d_t=16, seed=7)
    inputs32 = [x.float() for x in inputs64]
    kw = dict(mask=make_mask("left", 2, 300), causal=causal, scale_s=0.5, scale_t=0.4)
    truth = relation_kl_naive(*inputs64, reduction="none", **kw)
    err_naive = (relation_kl_naive(*inputs32, reduction="none", **kw).double() - truth).abs()
    stats = relation_kl_stats(*inputs32, reduction="none", **kw)
    assert stats.dtype == torch.float32
    err_stats = (stats.double() - truth).abs()
    assert err_stats.max() <= 2 * err_naive.max()
    mean_err = abs(stats.double().mean() - truth.mean()) / truth.mean()
    assert mean_err < 1e-6


@torch.no_grad()
def test_stats_identical_teacher_and_student_give_exact_zero() -> None:
    a, b, _, _ = make_inputs(heads=6, kv_s=3, seq=41, d_s=16, dtype=torch.float32)
    for mask in (None, make_mask("right", 2, 41)):
        assert torch.equal(
            relation_kl_stats(a, b, a, b, mask=mask, reduction="none"), torch.zeros(2, 6, 41)
        )


@torch.no_grad()
def test_stats_shared_teacher_terms_give_the_same_kl() -> None:
    inputs = make_inputs(heads=4, kv_s=2, kv_t=1, seq=50, dtype=torch.float32)
    mask = make_mask("left", 2, 50)
    terms = teacher_terms(inputs[2], inputs[3], mask=mask, scale_t=0.2)
    shared = relation_kl_stats(*inputs, mask=mask, scale_t=0.2, teacher=terms, reduction="none")
    alone = relation_kl_stats(*inputs, mask=mask, scale_t=0.2, reduction="none")
    assert torch.equal(shared, alone)


@torch.no_grad()
def test_attention_with_lse_is_sdpa_and_its_lse_gives_the_same_kl() -> None:
    """The student's own causal attention call gives SDPA's output bit for bit and the
    log-sum-exp the KL needs: passing it as ``student_lse`` changes nothing."""
    a_s, b_s, a_t, b_t = make_inputs(
        heads=6, kv_s=2, kv_t=3, seq=70, d_s=16, d_t=16, dtype=torch.float32
    )
    v = torch.randn(b_s.shape, generator=torch.Generator().manual_seed(3))
    out, lse = attention_with_lse(a_s, b_s, v, 0.3)
    sdpa = torch.nn.functional.scaled_dot_product_attention(
        a_s, b_s, v, is_causal=True, scale=0.3, enable_gqa=True
    )
    assert torch.equal(out, sdpa)
    scores = 0.3 * a_s.double() @ b_s.double().repeat_interleave(3, dim=1).transpose(-1, -2)
    scores = scores.masked_fill(~torch.ones(70, 70, dtype=torch.bool).tril(), float("-inf"))
    torch.testing.assert_close(lse.double(), scores.logsumexp(-1), rtol=0, atol=1e-5)
    kw = dict(scale_s=0.3, scale_t=0.2, reduction="none")
    assert torch.equal(
        relation_kl_stats(a_s, b_s, a_t, b_t, student_lse=lse, **kw),
        relation_kl_stats(a_s, b_s, a_t, b_t, **kw),
    )
    with pytest.raises(ValueError, match="student_lse has shape"):
        relation_kl_stats(a_s, b_s, a_t, b_t, student_lse=lse[:, :3], **kw)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@torch.no_grad()
def test_stats_all_rows_masked_is_zero_not_nan(reduction: str) -> None:
    inputs = make_inputs(seq=9)
    out = relation_kl(
        *inputs, mask=torch.zeros(2, 9, dtype=torch.bool), reduction=reduction, impl="stats"
    )
    assert not out.isnan().any() and (out == 0).all()


def test_stats_refuses_gradients_and_unequal_head_dims() -> None:
    inputs = make_inputs(seq=9)
    with pytest.raises(ValueError, match="forward-only"):
        relation_kl(*inputs, impl="stats")
    with torch.no_grad(), pytest.raises(ValueError, match="equal head dims"):
        relation_kl(*make_inputs(seq=9, d_s=8, d_t=4), impl="stats")
    with torch.no_grad():
        relation_kl(*inputs, impl="stats")  # under no_grad the same inputs are fine
    assert stats_supported("cpu") and not stats_supported("meta")


def _last_dim_strided(x: torch.Tensor) -> torch.Tensor:
    """``x``'s values in a tensor whose last dimension has a stride above 1."""
    out = x.transpose(-1, -2).contiguous().transpose(-1, -2)
    assert out.stride(-1) != 1
    return out


@pytest.mark.parametrize("which", range(4))
@torch.no_grad()
def test_stats_reads_inputs_with_a_strided_last_dimension(which: int) -> None:
    """The CPU flash op reads the last dimension as dense: a strided input is copied first
    (it gave errors of 1e37 or NaN before), for every one of the four inputs."""
    # kv heads = query heads: keys are not repeated (a repeat copies them dense)
    inputs = list(make_inputs(heads=4, kv_s=4, kv_t=4, seq=33, d_s=8, d_t=8))
    ref = relation_kl_naive(*inputs, reduction="none")
    inputs[which] = _last_dim_strided(inputs[which])
    torch.testing.assert_close(
        relation_kl(*inputs, reduction="none", impl="stats"), ref, rtol=0, atol=1e-11
    )


@torch.no_grad()
def test_attention_with_lse_reads_strided_inputs() -> None:
    q, k, _, _ = make_inputs(heads=4, kv_s=4, kv_t=4, seq=20, d_s=8, d_t=8, dtype=torch.float32)
    v = torch.randn(k.shape, generator=torch.Generator().manual_seed(5))
    dense, lse = attention_with_lse(q, k, v, 0.3)
    for strided in ((_last_dim_strided(q), k, v), (q, _last_dim_strided(k), _last_dim_strided(v))):
        out, lse2 = attention_with_lse(*strided, 0.3)
        assert torch.equal(out, dense) and torch.equal(lse2, lse)


def test_stats_refuses_teacher_terms_of_another_call() -> None:
    """Teacher terms computed without the call's mask, with another scale_t or causality are
    refused (a mask-less terms object gave 0.226 for 0.474 before)."""
    inputs = make_inputs(heads=4, kv_s=2, kv_t=1, seq=30, dtype=torch.float32)
    mask = make_mask("left", 2, 30)
    with torch.no_grad():
        plain = teacher_terms(inputs[2], inputs[3], scale_t=0.2)
        with pytest.raises(ValueError, match="another mask"):
            relation_kl_stats(*inputs, mask=mask, scale_t=0.2, teacher=plain)
        with pytest.raises(ValueError, match=r"scale_t 0\.2, not 0\.3"):
            relation_kl_stats(*inputs, scale_t=0.3, teacher=plain)
        with pytest.raises(ValueError, match="causal=True, not False"):
            relation_kl_stats(*inputs, causal=False, scale_t=0.2, teacher=plain)
