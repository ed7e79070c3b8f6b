"""Layer norm as array kernels: the forward of :func:`tracegrad.rules.nn.layer_norm` and
its first-order backward (the vjp takes them whenever it is handed plain arrays, i.e.
when no graph of the backward is recorded; with ``create_graph=True`` the vjp's
composite form runs instead).

Why: layer norm runs twice per transformer block on small rows (the model width), where
the composite form's cost is its passes and temporaries -- a broadcast ``invstd * w`` as
large as the input, ``centered * centered``, ``g * xhat``... and NumPy's ``sum`` along a
short last axis is its slowest reduction. Here ``x`` is seen as (rows, K): the row sums
are products with a vector of ones (BLAS), the dot products ``einsum`` (no temporary),
and the output and ``dx`` are written in place; the forward makes 5 passes over the
data and the backward 10, without a temporary but ``xhat``.

On float32 CPU arrays of at least :data:`NUMBA_MIN` elements, where Numba can be imported
(the ``jit`` extra, see :mod:`.compiled`), each row is instead normalised by one compiled
loop that keeps it in cache: statistics and sums accumulated in float64 (so the results
are within a few float32 ulps of the NumPy kernels', usually closer to the exact value).
"""
from . import compiled

__all__ = ["layer_norm_forward", "layer_norm_backward", "fits", "NUMBA_MIN"]

# Elements from which float32 layer norm runs compiled (None: never); the first such call
# imports Numba (~0.3 s) and compiles or loads the kernels.
NUMBA_MIN = 1 << 15


def fits(xp, *arrays):
    """Whether the kernels serve these operands: NumPy arrays (None allowed) of one
    float32 or float64 dtype, ``x`` (the first) not empty."""
    x = arrays[0]
    if xp.name != "cpu" or x.size == 0 or x.dtype.char not in "fd":
        return False
    return all(a is None or (isinstance(a, xp.ndarray) and a.dtype == x.dtype) for a in arrays)


def _rows(x, k):
    return x.reshape(x.size // k, k)


def layer_norm_forward(xp, x, weight, bias, eps, k, stat_shape):
    """(output, mean, invstd) of ``x`` normalised over its trailing ``k`` elements per row;
    the statistics in ``stat_shape``. None where a row's squared deviations overflow (the
    caller then rescales, see :func:`tracegrad.rules.nn._moments`)."""
    x2 = _rows(x, k)
    fused = _compiled(x, "forward")
    if fused is not None:
        x2 = xp.ascontiguousarray(x2)
        m = x2.shape[0]
        out, mean, invstd = xp.empty_like(x2), xp.empty(m, dtype=x.dtype), xp.empty(m, dtype=x.dtype)
        fused(x2, _flat(xp, weight, k), _flat(xp, bias, k), weight is not None, bias is not None, float(eps),
              out, mean, invstd)
        return out.reshape(x.shape), mean.reshape(stat_shape), invstd.reshape(stat_shape)
    ones = xp.ones(k, dtype=x.dtype)
    mean = x2 @ ones
    mean /= k
    out = xp.subtract(x2, mean[:, None])
    var = xp.einsum("mk,mk->m", out, out)
    var /= k
    if not (var <= xp.finfo(var.dtype).max).all():
        return None
    var += eps
    invstd = xp.sqrt(var, out=var)
    xp.divide(1, invstd, out=invstd)
    out *= invstd[:, None]
    if weight is not None:
        out *= weight.reshape(k)
    if bias is not None:
        out += bias.reshape(k)
    return out.reshape(x.shape), mean.reshape(stat_shape), invstd.reshape(stat_shape)


def layer_norm_backward(xp, g, gm, gi, x, weight, mean, invstd, k, need_weight, need_bias):
    """(dx, dw, db) of :func:`layer_norm_forward` for the cotangents ``g`` (output), ``gm``
    (mean) and ``gi`` (invstd; either may be None), dw and db flat (K,) (None where not needed): the formulas
    of :func:`tracegrad.rules.nn._normalized_grads`."""
    x2, g2 = _rows(x, k), _rows(g, k)
    m = x2.shape[0]
    fused = _compiled(x, "backward")
    if fused is not None:
        dx = xp.empty((m, k), dtype=x.dtype)
        dw, db = xp.zeros(k), xp.zeros(k)  # (float64 sums over the rows)
        zeros = xp.zeros(m, dtype=x.dtype)
        fused(xp.ascontiguousarray(g2), xp.ascontiguousarray(x2), _flat(xp, weight, k), weight is not None,
              xp.ascontiguousarray(mean.reshape(m)), xp.ascontiguousarray(invstd.reshape(m)),
              zeros if gm is None else xp.ascontiguousarray(gm.reshape(m)),
              zeros if gi is None else xp.ascontiguousarray(gi.reshape(m)), dx, dw, db)
        return (dx.reshape(x.shape), dw.astype(x.dtype) if need_weight else None,
                db.astype(x.dtype) if need_bias else None)
    inv = invstd.reshape(m)
    xhat = xp.subtract(x2, mean.reshape(m, 1))
    xhat *= inv[:, None]
    dw = xp.einsum("mk,mk->k", g2, xhat) if need_weight else None
    db = xp.ones(m, dtype=g.dtype) @ g2 if need_bias else None
    if weight is not None:
        dx = g2 * weight.reshape(k)
        s1 = dx @ xp.ones(k, dtype=g.dtype)
        s2 = xp.einsum("mk,mk->m", dx, xhat)
        dx *= inv[:, None]
    else:
        s1 = g2 @ xp.ones(k, dtype=g.dtype)
        s2 = xp.einsum("mk,mk->m", g2, xhat)
        dx = g2 * inv[:, None]
    # d mean / dx = 1/k; d invstd / dx = -invstd^2 xhat / k
    inv_k = 1.0 / k
    a = ((0 if gm is None else gm.reshape(m)) - inv * s1) * inv_k
    c = (inv * s2 + (0 if gi is None else gi.reshape(m)) * inv * inv) * -inv_k
    xhat *= c[:, None]
    dx += xhat
    dx += a[:, None]
    return dx.reshape(x.shape), dw, db


# -- the compiled float32 form -----------------------------------------------------------------------

def _flat(xp, a, k):
    """A weight or bias as a flat C float32 array (an unused placeholder for None)."""
    return xp.empty(1, dtype=xp.float32) if a is None else xp.ascontiguousarray(a.reshape(k))


def _compiled(x, which):
    if NUMBA_MIN is None or x.dtype.char != "f" or x.size < NUMBA_MIN:
        return None
    return compiled.kernel(f"layer_norm_{which}", lambda: _source(which), _SIGNATURES[which])


def _source(which):
    """The module of kernel ``which`` alone (the loader keys a module by its text)."""
    return _HEAD + _BODIES[which]


_SIGNATURES = {
    "forward": "void(float32[:, ::1], float32[::1], float32[::1], boolean, boolean, float64, "
               "float32[:, ::1], float32[::1], float32[::1])",
    "backward": "void(float32[:, ::1], float32[:, ::1], float32[::1], boolean, float32[::1], float32[::1], "
                "float32[::1], float32[::1], float32[:, ::1], float64[::1], float64[::1])",
}

# Sums are reassociated (fastmath "reassoc": vectorised), in float64.
_HEAD = """import numpy as np
import numba

_OPTIONS = dict(cache=True, error_model="numpy", fastmath={"reassoc", "contract"})


"""
_BODIES = {"forward": """@numba.njit(**_OPTIONS)
def layer_norm_forward(x, w, b, has_w, has_b, eps, out, mean, invstd):
    m, k = x.shape
    for i in range(m):
        s = 0.0
        for j in range(k):
            s += np.float64(x[i, j])
        mu = s / k
        q = 0.0
        for j in range(k):
            d = np.float64(x[i, j]) - mu
            q += d * d
        inv = 1.0 / np.sqrt(q / k + eps)
        mu32, inv32 = np.float32(mu), np.float32(inv)
        mean[i], invstd[i] = mu32, inv32
        for j in range(k):
            y = (x[i, j] - mu32) * inv32
            if has_w:
                y = y * w[j]
            if has_b:
                y = y + b[j]
            out[i, j] = y
""", "backward": """@numba.njit(**_OPTIONS)
def layer_norm_backward(g, x, w, has_w, mean, invstd, gm, gi, dx, dw, db):
    m, k = x.shape
    xh = np.empty(k)
    gw = np.empty(k)
    for i in range(m):
        mu, inv = np.float64(mean[i]), np.float64(invstd[i])
        for j in range(k):
            xh[j] = (np.float64(x[i, j]) - mu) * inv
            gw[j] = np.float64(g[i, j])
        for j in range(k):
            dw[j] += gw[j] * xh[j]
            db[j] += gw[j]
        if has_w:
            for j in range(k):
                gw[j] *= w[j]
        s1 = 0.0
        s2 = 0.0
        for j in range(k):
            s1 += gw[j]
            s2 += gw[j] * xh[j]
        a = (gm[i] - inv * s1) / k
        c = -(inv * s2 + gi[i] * inv * inv) / k
        for j in range(k):
            dx[i, j] = gw[j] * inv + a + xh[j] * c
"""}
