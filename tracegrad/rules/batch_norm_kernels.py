"""Batch norm in training mode as array kernels: the forward of
:func:`tracegrad.rules.nn.batch_norm` and its first-order backward (the vjp takes them
whenever it is handed plain arrays, i.e. when no graph of the backward is recorded; with
``create_graph=True`` the vjp's composite form runs instead).

Why not ufuncs and ``sum`` over the whole array: a per-channel sum over dims (0, 2, 3)
is NumPy's slowest reduction (runs as short as one 2x2 image, ~3x slower than
``einsum('ncl->c')``, which is as accurate here), and each composite step allocated a
temporary as large as the input. Here the statistics are einsums, the output is written
in place, and the channels are split into slabs for the intra-op threads
(:mod:`tracegrad.backend.threads`): each channel's statistics are independent.
"""
from ..backend import threads
from .scratch import scratch

__all__ = ["batch_norm_forward", "batch_norm_backward"]


def _by_channels(xp, fn, x3, passes):
    """``fn(c0, c1)`` over slabs of the channels (dim 1) of ``x3`` shared out among the
    intra-op threads (on the CPU; elsewhere one call covers all channels)."""
    if xp.name == "cpu":
        threads.parallel(fn, x3.shape[1], passes * x3.nbytes)
    else:
        fn(0, x3.shape[1])


def _sums(xp, a):
    return xp.einsum("ncl->c", a)


def _dots(xp, a, b):
    return xp.einsum("ncl,ncl->c", a, b)


def _layout(x):
    """``x`` as (N, C, L), and the number of values per channel."""
    n, c = x.shape[0], x.shape[1]
    x3 = x.reshape(n, c, -1)
    return x3, n * x3.shape[2]


def batch_norm_forward(xp, x, weight, bias, eps, moments):
    """(output, mean, invstd) of a non-empty ``x`` (N, C, *S), the statistics of shape
    (C,). ``moments`` is :func:`tracegrad.rules.nn._moments`, used for a slab whose
    squared deviations overflow (it rescales)."""
    x3, count = _layout(x)
    c = x3.shape[1]
    out = xp.empty(x3.shape, dtype=x.dtype)
    mean, invstd = xp.empty(c, dtype=x.dtype), xp.empty(c, dtype=x.dtype)

    def slab(c0, c1):
        xs, o = x3[:, c0:c1], out[:, c0:c1]
        m = _sums(xp, xs) / count
        xp.subtract(xs, m[:, None], out=o)
        var = _dots(xp, o, o) / count
        inv = 1 / xp.sqrt(var + eps)
        if not (var <= xp.finfo(var.dtype).max).all():
            _, m, inv = moments(xp, xs, (0, 2), eps)
            m, inv = m.reshape(-1), inv.reshape(-1)
        scale = inv if weight is None else inv * weight[c0:c1]
        o *= scale[:, None]
        if bias is not None:
            o += bias[c0:c1][:, None]
        mean[c0:c1], invstd[c0:c1] = m, inv
    _by_channels(xp, slab, x3, 5)
    return out.reshape(x.shape), mean, invstd


def batch_norm_backward(xp, g, gm, gi, x, weight, mean, invstd):
    """(dx, dw, db) of :func:`batch_norm_forward` for the cotangents ``g`` (output), ``gm``
    (mean) and ``gi`` (invstd; either may be None), dw and db of shape (C,): the formulas of
    :func:`tracegrad.rules.nn._per_feature_grads`."""
    x3, count = _layout(x)
    g3 = g.reshape(x3.shape)
    c, inv_n = x3.shape[1], 1.0 / count
    dx = xp.empty(x3.shape, dtype=g.dtype)
    dw, db = xp.empty(c, dtype=g.dtype), xp.empty(c, dtype=g.dtype)

    def slab(c0, c1):
        gs, o = g3[:, c0:c1], dx[:, c0:c1]
        inv = invstd[c0:c1]
        centered = scratch(xp, "batch_norm", gs.shape, x.dtype)
        xp.subtract(x3[:, c0:c1], mean[c0:c1][:, None], out=centered)
        s1 = _sums(xp, gs)
        s2 = _dots(xp, gs, centered) * inv  # sum(g xhat)
        db[c0:c1], dw[c0:c1] = s1, s2
        scale = inv
        if weight is not None:
            w = weight[c0:c1]
            s1, s2, scale = s1 * w, s2 * w, inv * w
        a = ((0 if gm is None else gm[c0:c1]) - inv * s1) * inv_n
        k = (inv * s2 + (0 if gi is None else gi[c0:c1]) * inv * inv) * -inv_n
        xp.multiply(gs, scale[:, None], out=o)
        centered *= (k * inv)[:, None]
        o += centered
        o += a[:, None]
    _by_channels(xp, slab, x3, 9)
    return dx.reshape(x.shape), dw, db
