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

On C-contiguous float32 CPU arrays of at least :data:`NUMBA_MIN` elements, where Numba can
be imported (the ``jit`` extra) and once a kernel is worth loading (:mod:`.compiled`: once
the time it would have saved pays for loading it -- resnet18 at batch 8 on 64x64 images:
a few hundred steps, a training run's first half minute), each channel is instead one
compiled loop that reads its values while they are in cache: the statistics in one read
(two for the forward's), the output in one pass, where the NumPy form makes five
(forward) and nine (backward) passes over the whole array. Sums are accumulated in float64
(the forward's squared deviations cannot overflow there, so it needs no rescaled retry);
values and gradients are within a few float32 ulps of the NumPy form's. resnet18's 20
batch norms at batch 8 on 64x64 images: 1.6 ms forward and 2.3 ms backward in NumPy, 0.6
and 0.55 ms compiled (2-core development VM; ~2.5 ms less a training step). A compiled
module records the composite vjp instead (the kernels serve the first-order backward on
arrays), which rounds differently in float32.
"""
from ..backend import threads
from . import compiled
from .scratch import scratch

__all__ = ["NUMBA_MIN", "batch_norm_forward", "batch_norm_backward"]

# Elements from which float32 batch norm may run compiled (None: never; the tests of the
# NumPy form set it), once a kernel is worth loading.
NUMBA_MIN = 1 << 13

# Seconds the compiled form saves per element (resnet18's batch norms above, 1.6M values
# per step: ~1.0 ms forward, ~1.8 ms backward).
SAVING_S = {"forward": 0.6e-9, "backward": 1.1e-9}


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
    fused = _compiled(xp, "forward", x, weight, bias)
    if fused is not None:
        w, b = compiled.operand(xp, weight, c), compiled.operand(xp, bias, c)
        _by_channels(xp, lambda c0, c1: fused(x3, w, b, weight is not None, bias is not None, float(eps),
                                              c0, c1, out, mean, invstd), x3, 2)
        return out.reshape(x.shape), mean, invstd

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
    fused = _compiled(xp, "backward", x, g, weight, mean, invstd, gm, gi)
    if fused is not None:
        w, m, i = (compiled.operand(xp, a, c) for a in (weight, gm, gi))
        _by_channels(xp, lambda c0, c1: fused(g3, x3, w, weight is not None, mean, invstd, m, gm is not None,
                                              i, gi is not None, c0, c1, dx, dw, db), x3, 3)
        return dx.reshape(x.shape), dw, db

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


# -- the compiled float32 form -----------------------------------------------------------------------

def _compiled(xp, which, x, *others):
    """The compiled kernel ``which`` where it serves these operands (C-contiguous float32
    NumPy arrays, None allowed beside ``x``) and is worth loading; else None."""
    if xp.name != "cpu" or x.dtype.char != "f" or not x.flags.c_contiguous:
        return None
    if not all(a is None or (isinstance(a, xp.ndarray) and a.dtype == x.dtype and a.flags.c_contiguous)
               for a in others):
        return None
    return compiled.sized(f"batch_norm_{which}", x.size, NUMBA_MIN, SAVING_S[which], lambda: _SOURCE,
                          _SIGNATURES[which])


_VECTOR, _BLOCK = "float32[::1]", "float32[:, :, ::1]"
_SIGNATURES = {
    "forward": f"void({_BLOCK}, {_VECTOR}, {_VECTOR}, boolean, boolean, float64, int64, int64, {_BLOCK}, "
               f"{_VECTOR}, {_VECTOR})",
    "backward": f"void({_BLOCK}, {_BLOCK}, {_VECTOR}, boolean, {_VECTOR}, {_VECTOR}, {_VECTOR}, boolean, "
                f"{_VECTOR}, boolean, int64, int64, {_BLOCK}, {_VECTOR}, {_VECTOR})",
}

# Channels c0 to c1 of x (N, C, L); sums reassociated (vectorised) in float64. The
# formulas and their order are the NumPy form's above; nogil: the intra-op threads run
# slabs of channels side by side.
_SOURCE = """import numpy as np
import numba

_OPTIONS = dict(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc"})


@numba.njit(**_OPTIONS)
def batch_norm_forward(x, w, b, has_w, has_b, eps, c0, c1, out, mean, invstd):
    n, _, l = x.shape
    count = n * l
    for ch in range(c0, c1):
        s = 0.0
        for i in range(n):
            for j in range(l):
                s += np.float64(x[i, ch, j])
        mu = s / count
        q = 0.0
        for i in range(n):
            for j in range(l):
                d = np.float64(x[i, ch, j]) - mu
                q += d * d
        m, inv = np.float32(mu), np.float32(1.0 / np.sqrt(q / count + eps))
        mean[ch], invstd[ch] = m, inv
        scale = inv * w[ch] if has_w else inv
        shift = b[ch] if has_b else np.float32(0.0)
        for i in range(n):
            for j in range(l):
                out[i, ch, j] = (x[i, ch, j] - m) * scale + shift


@numba.njit(**_OPTIONS)
def batch_norm_backward(g, x, w, has_w, mean, invstd, gm, has_gm, gi, has_gi, c0, c1, dx, dw, db):
    n, _, l = x.shape
    inv_n = 1.0 / (n * l)
    for ch in range(c0, c1):
        m, inv = mean[ch], invstd[ch]
        s1 = 0.0
        s2 = 0.0
        for i in range(n):
            for j in range(l):
                gv = np.float64(g[i, ch, j])
                s1 += gv
                s2 += gv * np.float64(x[i, ch, j] - m)
        s2 *= inv
        db[ch], dw[ch] = np.float32(s1), np.float32(s2)
        scale = np.float64(inv)
        if has_w:
            s1, s2, scale = s1 * w[ch], s2 * w[ch], scale * w[ch]
        a = ((gm[ch] if has_gm else 0.0) - inv * s1) * inv_n
        k = (inv * s2 + (gi[ch] if has_gi else 0.0) * inv * inv) * -inv_n
        a32, k32, scale32 = np.float32(a), np.float32(k * inv), np.float32(scale)
        for i in range(n):
            for j in range(l):
                dx[i, ch, j] = g[i, ch, j] * scale32 + (x[i, ch, j] - m) * k32 + a32
"""
