"""Fused scaled dot-product attention: ``P = softmax(scale * Q K^T + bias)``, ``O = P V``.

One primitive instead of five (mul, matmul, mask, softmax, matmul) because attention is
the hot loop of every transformer: the kernel works in place on the score matrix and the
backward is four matrix products and a few passes over P. Causal attention's forward and
backward took 1.25-1.35x less CPU time than the five-node composition (B, H, T, D = 8, 4,
64, 16 and 4, 4, 256, 32 in float32; benchmarks/attention.py compares with torch). PyTorch
records the same fused node on the CPU (``ScaledDotProductFlashAttentionForCpuBackward0``).

Outputs are ``(O, P)``: the vjp reads ``P`` instead of recomputing it. Rows whose every
score is -inf (all keys masked) give ``P = 0`` and zero gradients, PyTorch's "safe
softmax". ``causal`` masks key ``j > i`` for query ``i`` (top-left aligned), from a cached
additive mask rather than an operand. ``bias`` is an additive float mask (or None),
broadcast against the scores; it is differentiable, as PyTorch's float ``attn_mask`` is.
"""
import functools

from .. import backend
from ..backend import (
    cpu as host,  # host-side (NumPy) arithmetic, never on device arrays
)
from . import attention_blocks
from .broadcast import sum_to, unbroadcast, zeros_of
from .core import KEEP, primitive
from .linalg import _mT, matmul
from .loss import SHIFT_SPAN
from .reduce import sum
from .shape import reshape
from .scratch import constant_vector

__all__ = ["attention"]


@functools.lru_cache(maxsize=64)
def _causal_bias_keys_first(xp, S, L, dtype):
    """The causal mask in the kernel's (keys, queries) layout: 0 where key j <= query i,
    -inf below the diagonal; shared across calls (only ever read: it is added)."""
    return xp.tril(xp.full((S, L), -xp.inf, dtype=dtype), -1)


def _safe_softmax_over_keys_(xp, st):
    """Softmax over dim -2 (the keys) of ``st``, in place; columns of -inf give zeros.

    The scores are kept as (..., keys, queries), the transpose of PyTorch's layout: a
    reduction over dim -2 adds or compares whole contiguous rows (NumPy vectorises it),
    where one over the last dim walks rows as short as the sequence (~7x slower for 64
    keys), and the per-query max and sum broadcast along rows."""
    if st.shape[-2] == 0:
        return st
    m = st.max(axis=-2, keepdims=True)
    if not xp.isfinite(m).all():
        m = xp.where(m == -xp.inf, 0, m)
    st -= m
    xp.exp(st, out=st)
    z = st.sum(axis=-2, keepdims=True)
    z[z == 0] = 1
    st /= z
    return st


def _scores_keys_first(xp, q, k, scale):
    """``scale * K Q^T`` (keys, queries); the scaling on the smaller of a C-contiguous q
    (L, E) and the scores (S, L) -- a pass over a strided q (a view of a projection's
    output, in a transformer) costs more than one over the scores."""
    if q.shape[-1] < k.shape[-2] and q.flags.c_contiguous:
        return xp.matmul(k, xp.swapaxes(q * scale, -1, -2))
    st = xp.matmul(k, xp.swapaxes(q, -1, -2))
    st *= scale
    return st


def _shifted_softmax_over_keys_(xp, st, mask):
    """:func:`_safe_softmax_over_keys_` of ``st + mask`` (``mask`` an additive (S, L) mask
    or None) in place, shifted by the largest score of all instead of each query's: one
    scalar, where the per-query maximum is a reduction over short rows (~30 us for 16
    matrices of 32 x 32); the keys' sums are a BLAS product with ones. Only where the
    scores span at most :data:`tracegrad.rules.loss.SHIFT_SPAN` (each exponent's rounding
    error is then at most ulp(SPAN)/2, and nothing underflows); None otherwise, or where
    a score is inf or nan (``st`` is left as it was)."""
    top = st.max()
    if not top - st.min() <= SHIFT_SPAN:
        return None
    if mask is None:
        st -= top
    else:
        st += mask - top
    xp.exp(st, out=st)
    st /= xp.matmul(constant_vector(xp, st.shape[-2], st.dtype, 1), st)[..., None, :]
    return st


@primitive("ScaledDotProductFlashAttentionForCpuBackward0", dtypes=KEEP, nout=2,
           result_names=("output", "attn_weight"), saved_outputs=(1,), saved_names=("query", "key", "value", "attn_mask"))
def attention(xp, q, k, v, bias, *, scale, causal=False):
    blocks = causal and bias is None and attention_blocks.query_blocks(q.shape[-2], k.shape[-2])
    if blocks:
        mask = _causal_bias_keys_first(xp, k.shape[-2], q.shape[-2], xp.result_type(q, k, v))
        return attention_blocks.forward(xp, q, k, v, scale, blocks, mask, _safe_softmax_over_keys_)
    st = _scores_keys_first(xp, q, k, scale)
    if bias is None and st.size:
        mask = _causal_bias_keys_first(xp, st.shape[-2], st.shape[-1], st.dtype) if causal else None
        pt = _shifted_softmax_over_keys_(xp, st, mask)
        if pt is not None:
            p = xp.swapaxes(pt, -1, -2)
            return xp.matmul(p, v), p
    if causal:
        st += _causal_bias_keys_first(xp, st.shape[-2], st.shape[-1], st.dtype)
    if bias is not None:
        bt = xp.swapaxes(bias, -1, -2) if bias.ndim >= 2 else xp.reshape(bias, bias.shape + (1,) * bias.ndim)
        st = st + bt if host.broadcast_shapes(st.shape, bt.shape) != st.shape else xp.add(st, bt, out=st)
    pt = _safe_softmax_over_keys_(xp, st)
    p = xp.swapaxes(pt, -1, -2)  # (the weights in PyTorch's (L, S) layout, a view)
    return xp.matmul(p, v), p


def _key_sums(dst):
    """``sum(dst, dim=-2, keepdim=True)`` (over the keys, in the (keys, queries) layout) as a
    row of ones times ``dst``: NumPy's sum over dim -2 adds short rows one by one (~14 us
    for 16 matrices of 32 x 32, against ~3 us for the product). On arrays and on Tensors
    or tracers (the composite vjp) it is the same product, so both backwards round alike;
    second derivatives come from matmul's rules."""
    n = dst.shape[-2]
    if isinstance(dst, backend.ARRAY_TYPES):
        xp = backend.namespace_of(dst)
        return xp.matmul(constant_vector(xp, n, dst.dtype, 1).reshape(1, n), dst)
    return matmul(reshape(zeros_of(dst, shape=(n,)) + 1, shape=(1, n)), dst)


def _backward_arrays(xp, g, p, q, k, v, bias, scale):
    """The vjp on plain arrays (a first-order backward), in the forward's (keys, queries)
    layout: every product reads or writes that layout directly (BLAS takes the
    transposes) and the per-query sum over the keys is over dim -2. The same steps as
    :func:`_backward_composite`, written in place: the two give the same values bit for
    bit, so a compiled module's gradients equal the eager ones."""
    pt = xp.swapaxes(p, -1, -2)
    dst = xp.matmul(v, xp.swapaxes(g[0], -1, -2))  # dP^T
    if g[1] is not None and g[1].any():  # (P's cotangent is nearly always zeros, and this
        dst += xp.swapaxes(g[1], -1, -2)  # add reads it across its rows: 30x a read of it)
    dst *= pt
    dst -= pt * _key_sums(dst)  # dS^T = P^T * dP^T - P^T * sum(P^T * dP^T)
    dv = xp.matmul(pt, g[0])
    dq = xp.matmul(xp.swapaxes(dst, -1, -2), k)
    dq *= scale
    dk = xp.matmul(dst, q)
    dk *= scale
    return (unbroadcast(dq, q), unbroadcast(dk, k), unbroadcast(dv, v),
            None if bias is None else sum_to(xp.swapaxes(dst, -1, -2), shape=bias.shape))


def _backward_composite(g, p, q, k, v, bias, scale):
    """The vjp written with primitives (Tensors under ``create_graph=True``, tracers)."""
    pt = _mT(p)
    dst = matmul(v, _mT(g[0])) + _mT(g[1])
    dst = dst * pt
    dst = dst - pt * _key_sums(dst)
    return (unbroadcast(matmul(_mT(dst), k) * scale, q), unbroadcast(matmul(dst, q) * scale, k),
            unbroadcast(matmul(pt, g[0]), v), None if bias is None else sum_to(_mT(dst), shape=bias.shape))


@attention.vjp_all(uses="q k v bias out")
def attention_vjp(g, out, q, k, v, bias, *, scale, causal=False):
    arrays = backend.ARRAY_TYPES
    if (isinstance(q, arrays) and isinstance(k, arrays) and isinstance(v, arrays) and isinstance(g[0], arrays)
            and (g[1] is None or isinstance(g[1], arrays)) and (bias is None or isinstance(bias, arrays))):
        return _backward_arrays(backend.namespace_of(q), g, out[1], q, k, v, bias, scale)
    return _backward_composite(g, out[1], q, k, v, bias, scale)


@attention.jvp_all
def attention_jvp(t, out, q, k, v, bias, *, scale, causal=False):
    tq, tk, tv, tbias = t
    p = out[1]
    ds = (matmul(tq, _mT(k)) + matmul(q, _mT(tk))) * scale
    if tbias is not None:
        ds = ds + tbias
    dp = p * (ds - sum(ds * p, dim=(-1,), keepdim=True))
    return matmul(dp, v) + matmul(p, tv), dp
