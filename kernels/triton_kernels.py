"""Triton kernels of the relation KL: the forward sweep and the two backward kernels.

Private ``@triton.jit`` functions only; shapes, launch grids and the autograd Function live in
``triton_impl``, whose docstring describes the algorithm.  Plain pointer arithmetic throughout
(no block pointers), so the kernels build under Triton 3.6 and 3.9.
"""

import triton
import triton.language as tl

from ._common import MASK_VALUE

_NEG = tl.constexpr(MASK_VALUE)


@triton.jit
def _dot(x, y, F32: tl.constexpr):
    """``x @ y`` with fp32 accumulation; IEEE precision for fp32 operands."""
    if F32:  # noqa: SIM108 (a static branch reads clearer in a kernel)
        out = tl.dot(x, y, input_precision="ieee")
    else:
        out = tl.dot(x, y)
    return out


@triton.jit
def _dot_split(g, y, F32: tl.constexpr):
    """``g @ y`` for fp32 ``g``; low-precision ``y`` gets ``g`` as a high + low pair."""
    if F32:
        out = tl.dot(g, y, input_precision="ieee")
    else:
        hi = g.to(y.dtype)
        lo = (g - hi.to(tl.float32)).to(y.dtype)
        out = tl.dot(hi, y) + tl.dot(lo, y)
    return out


@triton.jit
def _load_rows(ptr, idx, n, stride_n, dim, D: tl.constexpr, UPCAST: tl.constexpr):
    """Load rows ``idx`` of an ``[n, dim]`` slice as ``[len(idx), D]`` (zero padded)."""
    offs_d = tl.arange(0, D)
    ptrs = ptr + idx[:, None] * stride_n + offs_d[None, :]
    x = tl.load(ptrs, mask=(idx[:, None] < n) & (offs_d[None, :] < dim), other=0.0)
    if UPCAST:
        x = x.to(tl.float32)
    return x


@triton.jit
def _load_cols_t(ptr, idx, n, stride_n, dim, D: tl.constexpr, UPCAST: tl.constexpr):
    """Load rows ``idx`` of an ``[n, dim]`` slice transposed, as ``[D, len(idx)]``."""
    offs_d = tl.arange(0, D)
    ptrs = ptr + offs_d[:, None] + idx[None, :] * stride_n
    x = tl.load(ptrs, mask=(offs_d[:, None] < dim) & (idx[None, :] < n), other=0.0)
    if UPCAST:
        x = x.to(tl.float32)
    return x


@triton.jit
def _token_ok(mask_ptr, idx, n, HAS_MASK: tl.constexpr):
    """In-range and (with a mask) real tokens among positions ``idx``."""
    ok = idx < n
    if HAS_MASK:
        ok = ok & (tl.load(mask_ptr + idx, mask=ok, other=0) != 0)
    return ok


@triton.jit
def _fwd_step(
    a_s, a_t, b_s_ptr, b_t_ptr, mask_ptr, rows, start_n, n, sb_s_n, sb_t_n, d_s, d_t,
    qk_s, qk_t, m_s, m_t, l_s, l_t, acc,
    DS: tl.constexpr, DT: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, HAS_MASK: tl.constexpr, EDGE: tl.constexpr, EVEN_D: tl.constexpr,
    UPCAST: tl.constexpr, F32: tl.constexpr,
):  # fmt: skip
    """One column tile of the forward sweep, scores in log2 units (``qk_*`` carry log2(e)).
    ``EDGE``: the tile may cross the diagonal or the end; otherwise only the padding mask (if
    any) can hide a column, and no causal or bounds comparison is made.

    A tile no mask touches (interior, no padding mask) takes the short path: unmasked loads
    when the head dims need no padding (``EVEN_D``), the row max taken on the raw dot products
    (``qk > 0``, so ``max(x) * qk`` is the max of the scaled scores bit for bit), each
    exponent's scale and shift as one fused multiply-add, and ``S_t - S_s`` as
    ``(X_t - X_s) + (M_t - M_s)`` with ``X = S - M`` the shifted scores the exponentials
    already need, the row constant ``M_t - M_s`` added once per row (``sum p_t`` is ``l_t``'s
    increment). Three fewer floating-point operations per score than the masked path."""
    cols = start_n + tl.arange(0, BLOCK_N)
    if EVEN_D and not EDGE:
        offs_s = tl.arange(0, DS)
        offs_t = tl.arange(0, DT)
        bt_s = tl.load(b_s_ptr + offs_s[:, None] + cols[None, :] * sb_s_n)
        bt_t = tl.load(b_t_ptr + offs_t[:, None] + cols[None, :] * sb_t_n)
        if UPCAST:
            bt_s = bt_s.to(tl.float32)
            bt_t = bt_t.to(tl.float32)
    else:
        bt_s = _load_cols_t(b_s_ptr, cols, n, sb_s_n, d_s, DS, UPCAST)
        bt_t = _load_cols_t(b_t_ptr, cols, n, sb_t_n, d_t, DT, UPCAST)
    raw_s = _dot(a_s, bt_s, F32)
    raw_t = _dot(a_t, bt_t, F32)
    if EDGE or HAS_MASK:
        valid = _token_ok(mask_ptr, cols, n, HAS_MASK)[None, :]
        if EDGE and CAUSAL:
            valid = valid & (cols[None, :] <= rows[:, None])
        s_s = tl.where(valid, raw_s * qk_s, _NEG)
        s_t = tl.where(valid, raw_t * qk_t, _NEG)
        new_m_s = tl.maximum(m_s, tl.max(s_s, 1))
        new_m_t = tl.maximum(m_t, tl.max(s_t, 1))
        x_s = s_s - new_m_s[:, None]
        x_t = s_t - new_m_t[:, None]
        # Invalid entries hold _NEG in both score tiles, so their difference is exactly 0.
        diff = tl.sum(tl.exp2(x_t) * (s_t - s_s), 1)
        p_sum = tl.sum(tl.exp2(x_t), 1)
    else:
        new_m_s = tl.maximum(m_s, tl.max(raw_s, 1) * qk_s)
        new_m_t = tl.maximum(m_t, tl.max(raw_t, 1) * qk_t)
        x_s = raw_s * qk_s - new_m_s[:, None]
        x_t = raw_t * qk_t - new_m_t[:, None]
        p_t = tl.exp2(x_t)
        p_sum = tl.sum(p_t, 1)
        diff = tl.sum(p_t * (x_t - x_s), 1) + (new_m_t - new_m_s) * p_sum

    l_s = l_s * tl.exp2(m_s - new_m_s) + tl.sum(tl.exp2(x_s), 1)
    alpha_t = tl.exp2(m_t - new_m_t)
    l_t = l_t * alpha_t + p_sum
    acc = acc * alpha_t + diff
    return new_m_s, new_m_t, l_s, l_t, acc


@triton.jit
def _relkl_fwd_kernel(
    A_s, B_s, A_t, B_t, MASK, KL, LSE_s, LSE_t,
    sa_s_b, sa_s_h, sa_s_n,
    sb_s_b, sb_s_h, sb_s_n,
    sa_t_b, sa_t_h, sa_t_n,
    sb_t_b, sb_t_h, sb_t_n,
    n, H, group_s, group_t, d_s, d_t, scale_s, scale_t,
    DS: tl.constexpr, DT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, HAS_MASK: tl.constexpr, EVEN_D: tl.constexpr,
    UPCAST: tl.constexpr, F32: tl.constexpr,
):  # fmt: skip
    # Causal rows cost more the further down they are: launch the longest row tiles first.
    if CAUSAL:  # noqa: SIM108 (a static branch)
        pid_m = tl.num_programs(0) - 1 - tl.program_id(0)
    else:
        pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = (pid_bh // H).to(tl.int64)
    h = (pid_bh % H).to(tl.int64)
    a_s_ptr = A_s + b * sa_s_b + h * sa_s_h
    a_t_ptr = A_t + b * sa_t_b + h * sa_t_h
    b_s_ptr = B_s + b * sb_s_b + (h // group_s) * sb_s_h
    b_t_ptr = B_t + b * sb_t_b + (h // group_t) * sb_t_h
    mask_ptr = MASK + b * n

    start_m = pid_m * BLOCK_M
    rows = start_m + tl.arange(0, BLOCK_M)
    a_s = _load_rows(a_s_ptr, rows, n, sa_s_n, d_s, DS, UPCAST)
    a_t = _load_rows(a_t_ptr, rows, n, sa_t_n, d_t, DT, UPCAST)
    log2e: tl.constexpr = 1.4426950408889634
    qk_s = scale_s * log2e
    qk_t = scale_t * log2e

    m_s = tl.full([BLOCK_M], _NEG, tl.float32)
    m_t = tl.full([BLOCK_M], _NEG, tl.float32)
    l_s = tl.zeros([BLOCK_M], tl.float32)
    l_t = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M], tl.float32)

    # Interior tiles (wholly below the diagonal, wholly inside n) first, then the edge tiles.
    if CAUSAL:
        lo = (start_m // BLOCK_N) * BLOCK_N
        hi = tl.minimum(n, start_m + BLOCK_M)
    else:
        lo = (n // BLOCK_N) * BLOCK_N
        hi = n
    for start_n in range(0, lo, BLOCK_N):
        m_s, m_t, l_s, l_t, acc = _fwd_step(
            a_s, a_t, b_s_ptr, b_t_ptr, mask_ptr, rows, start_n, n, sb_s_n, sb_t_n, d_s, d_t,
            qk_s, qk_t, m_s, m_t, l_s, l_t, acc,
            DS, DT, BLOCK_N, CAUSAL, HAS_MASK, False, EVEN_D, UPCAST, F32,
        )  # fmt: skip
    for start_n in range(lo, hi, BLOCK_N):
        m_s, m_t, l_s, l_t, acc = _fwd_step(
            a_s, a_t, b_s_ptr, b_t_ptr, mask_ptr, rows, start_n, n, sb_s_n, sb_t_n, d_s, d_t,
            qk_s, qk_t, m_s, m_t, l_s, l_t, acc,
            DS, DT, BLOCK_N, CAUSAL, HAS_MASK, True, EVEN_D, UPCAST, F32,
        )  # fmt: skip

    ln2: tl.constexpr = 0.6931471805599453
    lse2_s = m_s + tl.log2(l_s)
    lse2_t = m_t + tl.log2(l_t)
    kl = (acc / l_t - lse2_t + lse2_s) * ln2
    lse_s = lse2_s * ln2
    lse_t = lse2_t * ln2
    row_ok = _token_ok(mask_ptr, rows, n, HAS_MASK)
    out = pid_bh.to(tl.int64) * n + rows
    in_range = rows < n
    tl.store(KL + out, tl.where(row_ok, kl, 0.0), mask=in_range)
    tl.store(LSE_s + out, lse_s, mask=in_range)
    tl.store(LSE_t + out, lse_t, mask=in_range)


@triton.jit
def _relkl_bwd_da_kernel(
    A_s, B_s, A_t, B_t, MASK, LSE_s, LSE_t, DKL, DA,
    sa_s_b, sa_s_h, sa_s_n,
    sb_s_b, sb_s_h, sb_s_n,
    sa_t_b, sa_t_h, sa_t_n,
    sb_t_b, sb_t_h, sb_t_n,
    n, H, group_s, group_t, d_s, d_t, scale_s, scale_t,
    DS: tl.constexpr, DT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, HAS_MASK: tl.constexpr,
    UPCAST: tl.constexpr, F32: tl.constexpr,
):  # fmt: skip
    # Causal rows cost more the further down they are: launch the longest row tiles first.
    if CAUSAL:  # noqa: SIM108 (a static branch)
        pid_m = tl.num_programs(0) - 1 - tl.program_id(0)
    else:
        pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = (pid_bh // H).to(tl.int64)
    h = (pid_bh % H).to(tl.int64)
    a_s_ptr = A_s + b * sa_s_b + h * sa_s_h
    a_t_ptr = A_t + b * sa_t_b + h * sa_t_h
    b_s_ptr = B_s + b * sb_s_b + (h // group_s) * sb_s_h
    b_t_ptr = B_t + b * sb_t_b + (h // group_t) * sb_t_h
    mask_ptr = MASK + b * n

    start_m = pid_m * BLOCK_M
    rows = start_m + tl.arange(0, BLOCK_M)
    in_range = rows < n
    row_ok = _token_ok(mask_ptr, rows, n, HAS_MASK)
    a_s = _load_rows(a_s_ptr, rows, n, sa_s_n, d_s, DS, UPCAST)
    a_t = _load_rows(a_t_ptr, rows, n, sa_t_n, d_t, DT, UPCAST)
    vec = pid_bh.to(tl.int64) * n + rows
    lse_s = tl.load(LSE_s + vec, mask=in_range, other=0.0)
    lse_t = tl.load(LSE_t + vec, mask=in_range, other=0.0)
    w = tl.where(row_ok, tl.load(DKL + vec, mask=in_range, other=0.0), 0.0)

    acc = tl.zeros([BLOCK_M, DS], tl.float32)
    hi = n
    if CAUSAL:
        hi = tl.minimum(n, start_m + BLOCK_M)
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + tl.arange(0, BLOCK_N)
        valid = row_ok[:, None] & _token_ok(mask_ptr, cols, n, HAS_MASK)[None, :]
        if CAUSAL:
            valid = valid & (cols[None, :] <= rows[:, None])
        b_s = _load_rows(b_s_ptr, cols, n, sb_s_n, d_s, DS, UPCAST)
        bt_t = _load_cols_t(b_t_ptr, cols, n, sb_t_n, d_t, DT, UPCAST)
        s_s = _dot(a_s, tl.trans(b_s), F32) * scale_s
        s_t = _dot(a_t, bt_t, F32) * scale_t
        p_s = tl.exp(tl.where(valid, s_s - lse_s[:, None], _NEG))
        p_t = tl.exp(tl.where(valid, s_t - lse_t[:, None], _NEG))
        # |P_s - P_t| <= 1; the row weight is applied after the sweep.
        acc += _dot_split(p_s - p_t, b_s, F32)

    acc = acc * (w * scale_s)[:, None]
    offs_d = tl.arange(0, DS)
    da_ptrs = DA + b * sa_s_b + h * sa_s_h + rows[:, None] * sa_s_n + offs_d[None, :]
    tl.store(
        da_ptrs,
        acc.to(DA.dtype.element_ty),
        mask=in_range[:, None] & (offs_d[None, :] < d_s),
    )


@triton.jit
def _relkl_bwd_db_kernel(
    A_s, B_s, A_t, B_t, MASK, LSE_s, LSE_t, DKL, DB,
    sa_s_b, sa_s_h, sa_s_n,
    sb_s_b, sb_s_h, sb_s_n,
    sa_t_b, sa_t_h, sa_t_n,
    sb_t_b, sb_t_h, sb_t_n,
    n, H, KV_S, group_s, group_t, d_s, d_t, scale_s, scale_t,
    DS: tl.constexpr, DT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, HAS_MASK: tl.constexpr,
    UPCAST: tl.constexpr, F32: tl.constexpr,
):  # fmt: skip
    pid_n = tl.program_id(0)
    pid_bk = tl.program_id(1)
    b = (pid_bk // KV_S).to(tl.int64)
    g = (pid_bk % KV_S).to(tl.int64)
    b_s_ptr = B_s + b * sb_s_b + g * sb_s_h
    mask_ptr = MASK + b * n

    start_n = pid_n * BLOCK_N
    cols = start_n + tl.arange(0, BLOCK_N)
    col_ok = _token_ok(mask_ptr, cols, n, HAS_MASK)
    b_s = _load_rows(b_s_ptr, cols, n, sb_s_n, d_s, DS, UPCAST)

    acc = tl.zeros([BLOCK_N, DS], tl.float32)
    lo = 0
    if CAUSAL:
        lo = (start_n // BLOCK_M) * BLOCK_M
    for k in range(0, group_s):
        h = g * group_s + k
        a_s_ptr = A_s + b * sa_s_b + h * sa_s_h
        a_t_ptr = A_t + b * sa_t_b + h * sa_t_h
        b_t_ptr = B_t + b * sb_t_b + (h // group_t) * sb_t_h
        b_t = _load_rows(b_t_ptr, cols, n, sb_t_n, d_t, DT, UPCAST)
        vec_base = (b * H + h) * n
        for start_m in range(lo, n, BLOCK_M):
            rows = start_m + tl.arange(0, BLOCK_M)
            in_range = rows < n
            row_ok = _token_ok(mask_ptr, rows, n, HAS_MASK)
            valid = col_ok[:, None] & row_ok[None, :]
            if CAUSAL:
                valid = valid & (cols[:, None] <= rows[None, :])
            a_s = _load_rows(a_s_ptr, rows, n, sa_s_n, d_s, DS, UPCAST)
            at_t = _load_cols_t(a_t_ptr, rows, n, sa_t_n, d_t, DT, UPCAST)
            lse_s = tl.load(LSE_s + vec_base + rows, mask=in_range, other=0.0)
            lse_t = tl.load(LSE_t + vec_base + rows, mask=in_range, other=0.0)
            w = tl.where(row_ok, tl.load(DKL + vec_base + rows, mask=in_range, other=0.0), 0.0)
            # Transposed score tiles [BLOCK_N, BLOCK_M]: column j of the relation is row here.
            st_s = _dot(b_s, tl.trans(a_s), F32) * scale_s
            st_t = _dot(b_t, at_t, F32) * scale_t
            pt_s = tl.exp(tl.where(valid, st_s - lse_s[None, :], _NEG))
            pt_t = tl.exp(tl.where(valid, st_t - lse_t[None, :], _NEG))
            if F32:
                acc += _dot_split((pt_s - pt_t) * w[None, :], a_s, F32)
            else:
                # Normalise the row weights so the low-precision split neither underflows
                # (tiny mean-reduction weights) nor overflows; scale back in fp32.
                w_max = tl.max(tl.abs(w), 0)
                norm = tl.where(w_max > 0.0, w_max, 1.0)
                acc += _dot_split((pt_s - pt_t) * (w / norm)[None, :], a_s, F32) * norm

    acc = acc * scale_s
    offs_d = tl.arange(0, DS)
    db_ptrs = DB + b * sb_s_b + g * sb_s_h + cols[:, None] * sb_s_n + offs_d[None, :]
    tl.store(
        db_ptrs,
        acc.to(DB.dtype.element_ty),
        mask=(cols[:, None] < n) & (offs_d[None, :] < d_s),
    )
