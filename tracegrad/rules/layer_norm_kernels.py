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
"""
__all__ = ["layer_norm_forward", "layer_norm_backward", "fits"]


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
