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

from ..backend import (
    cpu as host,  # host-side (NumPy) arithmetic, never on device arrays
)
from .broadcast import sum_to, unbroadcast
from .core import KEEP, primitive
from .linalg import _mT, matmul
from .reduce import sum

__all__ = ["attention"]


@functools.lru_cache(maxsize=64)
def _causal_bias(xp, L, S, dtype):
    """0 where key j <= query i, -inf above the diagonal; shared across calls (only ever
    read: it is added to the scores)."""
    return xp.triu(xp.full((L, S), -xp.inf, dtype=dtype), 1)


def _safe_softmax_(xp, s):
    """Softmax over the last dim of ``s``, in place; rows of -inf give zeros."""
    if s.shape[-1] == 0:
        return s
    m = s.max(axis=-1, keepdims=True)
    if not xp.isfinite(m).all():
        m = xp.where(m == -xp.inf, 0, m)
    s -= m
    xp.exp(s, out=s)
    z = s.sum(axis=-1, keepdims=True)
    z[z == 0] = 1
    s /= z
    return s


@primitive("ScaledDotProductFlashAttentionForCpuBackward0", dtypes=KEEP, nout=2,
           result_names=("output", "attn_weight"), saved_outputs=(1,), saved_names=("query", "key", "value", "attn_mask"))
def attention(xp, q, k, v, bias, *, scale, causal=False):
    if q.shape[-1] < k.shape[-2]:  # scale the smaller of q (L, E) and the scores (L, S)
        s = xp.matmul(q * scale, xp.swapaxes(k, -1, -2))
    else:
        s = xp.matmul(q, xp.swapaxes(k, -1, -2))
        s *= scale
    if causal:
        s += _causal_bias(xp, s.shape[-2], s.shape[-1], s.dtype)
    if bias is not None:
        s = s + bias if host.broadcast_shapes(s.shape, bias.shape) != s.shape else xp.add(s, bias, out=s)
    p = _safe_softmax_(xp, s)
    return xp.matmul(p, v), p


def _score_grad(g, out, v):
    """d loss / d scores (before the softmax), from the cotangents of O and P."""
    p = out[1]
    dp = matmul(g[0], _mT(v)) + g[1]
    return p * (dp - sum(dp * p, dim=(-1,), keepdim=True))


@attention.vjp_all(uses="q k v bias out")
def attention_vjp(g, out, q, k, v, bias, *, scale, causal=False):
    ds = _score_grad(g, out, v)
    dv = unbroadcast(matmul(_mT(out[1]), g[0]), v)
    dq = unbroadcast(matmul(ds, k), q) * scale
    dk = unbroadcast(matmul(_mT(ds), q), k) * scale
    return dq, dk, dv, (None if bias is None else sum_to(ds, shape=bias.shape))


@attention.jvp_all
def attention_jvp(t, out, q, k, v, bias, *, scale, causal=False):
    tq, tk, tv, tbias = t
    p = out[1]
    ds = (matmul(tq, _mT(k)) + matmul(q, _mT(tk))) * scale
    if tbias is not None:
        ds = ds + tbias
    dp = p * (ds - sum(ds * p, dim=(-1,), keepdim=True))
    return matmul(dp, v) + matmul(p, tv), dp
