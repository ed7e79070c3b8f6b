"""Layer norm as array kernels: the forward of :func:`tracegrad.rules.nn.layer_norm` and
its first-order backward (the vjp takes them whenever it is handed plain arrays, i.e.
when no graph of the backward is recorded; with ``create_graph=True`` the vjp's
composite form runs instead).

Why: layer norm runs twice per transformer block on small rows (the model width), where
the composite form's cost is its passes and temporaries -- a broadcast ``invstd * w`` as
large as the input, ``centered * centered``... and NumPy's ``sum`` along a short last
axis is its slowest reduction. The forward sees ``x`` as (rows, K): the row means and
the squares' are products with a vector of 1/K (BLAS), and the output, written in place,
is scaled once by the outer product of invstd and the weight (see the kernel). On
float32 CPU arrays of at least :data:`NUMBA_MIN` elements, where Numba can be imported (the ``jit`` extra) and once the
kernel is worth loading (see :mod:`.compiled`), each row is normalised instead by one
compiled loop that keeps it in cache, its statistics accumulated in float64 (within a
few float32 ulps of the NumPy kernel's; 3x faster). The forward is the primitive's
kernel on every path. The backward kernel is the composite vjp's steps in place (fewer
temporaries, the same roundings): a faster backward that rounds otherwise would make
eager gradients differ from those of a compiled module, which records the composite vjp.
"""
import math

from .. import backend
from . import compiled
from .broadcast import sum_to, zeros_of
from .linalg import matmul
from .reduce import sum
from .scratch import constant_vector
from .shape import reshape

__all__ = ["NUMBA_MIN", "fits", "layer_norm_backward", "layer_norm_forward", "row_sums", "column_sums"]

# Elements from which float32 layer norm may run compiled (None: never), once the kernel
# is worth loading (:mod:`.compiled`: when the savings below have added up to the load's
# cost, ~1 s for a process's first compiled kernel).
NUMBA_MIN = 1 << 13

# Seconds the compiled forward saves per element (2^13 elements, a small GPT's 8 x 32 x 32
# activations, on the development VM: ~10 us against ~43 us for the NumPy kernel; ~2.7 ns
# at 64 x 256 x 384).
SAVING_S = {"forward": 3e-9}


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
    the statistics in ``stat_shape`` (None: the output alone, for a call that records
    nothing). None where a row's squared deviations overflow (the caller then rescales,
    see :func:`tracegrad.rules.nn._moments`)."""
    x2 = _rows(x, k)
    fused = _compiled(x, "forward")
    if fused is not None:
        x2 = xp.ascontiguousarray(x2)
        m = x2.shape[0]
        out, mean, invstd = xp.empty_like(x2), xp.empty(m, dtype=x.dtype), xp.empty(m, dtype=x.dtype)
        fused(x2, compiled.operand(xp, weight, k), compiled.operand(xp, bias, k), weight is not None,
              bias is not None, float(eps), out, mean, invstd)
        if stat_shape is None:
            return out.reshape(x.shape)
        return out.reshape(x.shape), mean.reshape(stat_shape), invstd.reshape(stat_shape)
    # Over x: the centring (a broadcast), the squares, their row sums (BLAS), and the
    # scaling by invstd (rows) times the weight (columns) -- NumPy walks a broadcast
    # operand's short rows one by one (~4 us for 256 rows of 32 float32), so the two
    # scalings are one pass by their outer product, a BLAS product (~3 us), and a plain
    # multiplication (~1 us) instead of two broadcasts. The row means are BLAS products
    # with 1/k, and the rest works on one value per row.
    per_k = constant_vector(xp, k, x.dtype, 1.0 / k)
    mean = x2 @ per_k
    out = xp.subtract(x2, mean[:, None])
    var = xp.square(out) @ per_k
    if not xp.dot(var, constant_vector(xp, var.shape[0], x.dtype, 1)) <= _LARGEST[x.dtype.char]:
        return None  # (a square overflowing, or nan: the general form -- as where only the sum of the
        # variances overflows, which the general form serves with the same values)
    var += eps
    invstd = xp.reciprocal(xp.sqrt(var, out=var), out=var)
    if weight is not None:
        out *= xp.dot(invstd[:, None], weight.reshape(1, k))
    else:
        out *= invstd[:, None]
    if bias is not None:
        out += bias.reshape(k)
    if stat_shape is None:
        return out.reshape(x.shape)
    return out.reshape(x.shape), mean.reshape(stat_shape), invstd.reshape(stat_shape)


_LARGEST = {"f": 3.4028234663852886e38, "d": 1.7976931348623157e308}


# -- the backward's sums, shared with the composite vjp -------------------------------------------------
#
# The backward's three reductions run over the rows (x seen as rows x K, K the normalised
# elements): NumPy's sum along a short last axis walks each row on its own (~14 us for
# 256 rows of 32 float32, against ~2 us for BLAS's matrix-vector product with ones), and
# sum_to over the rows costs as much. Written with primitives (reshape, matmul, zeros_of),
# the same helpers serve the kernel below on arrays and the composite vjp
# (:func:`tracegrad.rules.nn._normalized_grads`) on Tensors and tracers: the same
# products, so both still round alike, and second derivatives come from matmul's rules.

def _trailing(v, axes):
    """(rows, K) when ``axes`` are v's trailing axes and v is a non-empty float32/64 value;
    else None (the generic reductions then)."""
    nd, n = v.ndim, len(axes)
    if not n or axes[0] != nd - n or axes[-1] != nd - 1:  # (axes come sorted, without repeats)
        return None
    dtype = v.dtype
    if not (dtype.char in "fd" if isinstance(v, backend.ARRAY_TYPES)
            else str(dtype).rsplit(".", 1)[-1] in ("float32", "float64")):
        return None
    shape = v.shape
    k = math.prod(shape[nd - n:])
    rows = math.prod(shape[:nd - n])
    return (rows, k) if rows and k else None


def _ones(v, n):
    return zeros_of(v, shape=(n,)) + 1


def row_sums(v, axes):
    """``sum(v, dim=axes, keepdim=True)`` over trailing ``axes``: a product with ones."""
    layout = _trailing(v, axes)
    if layout is None:
        return sum(v, dim=axes, keepdim=True)
    rows, k = layout
    kept = tuple(v.shape[:v.ndim - len(axes)]) + (1,) * len(axes)
    if isinstance(v, backend.ARRAY_TYPES):  # (the kernel's arrays: the primitives' own operations, directly)
        return (v.reshape(rows, k) @ constant_vector(backend.namespace_of(v), k, v.dtype, 1)).reshape(kept)
    return reshape(matmul(reshape(v, shape=(rows, k)), _ones(v, k)), shape=kept)


def column_sums(v, axes, shape):
    """``sum_to(v, shape=shape)`` where ``shape`` is that of v's trailing ``axes`` (a layer
    norm's weight): ones times the rows."""
    layout = _trailing(v, axes)
    if layout is None or tuple(shape) != tuple(v.shape[v.ndim - len(axes):]):
        return sum_to(v, shape=shape)
    rows, k = layout
    if isinstance(v, backend.ARRAY_TYPES):
        return (constant_vector(backend.namespace_of(v), rows, v.dtype, 1) @ v.reshape(rows, k)).reshape(tuple(shape))
    return reshape(matmul(_ones(v, rows), reshape(v, shape=(rows, k))), shape=tuple(shape))


def layer_norm_backward(xp, g, gm, gi, x, weight, mean, invstd, axes, bias_shape):
    """(dx, dw, db) of :func:`layer_norm_forward` over ``axes`` for the cotangents ``g``
    (output), ``gm`` (mean) and ``gi`` (invstd); dw of the weight's shape (None without
    a weight), db of ``bias_shape`` (None without a bias). The steps of
    :func:`tracegrad.rules.nn._normalized_grads` -- the composite vjp that
    ``create_graph=True`` and the staged paths record -- in the same order, written in
    place: both give the same values bit for bit, so a compiled module's gradients equal
    the eager ones."""
    n = 1
    for a in axes:
        n *= x.shape[a]
    inv_n = 1.0 / n if n else 0.0
    xhat = xp.subtract(x, mean)
    xhat *= invstd
    gx = g * xhat
    dw = None if weight is None else column_sums(gx, axes, weight.shape)
    gw = g if weight is None else g * weight
    s1 = row_sums(gw, axes)
    reuse = dw is None or not xp.may_share_memory(dw, gx)  # (dw is gx where nothing was summed away)
    s2 = row_sums(xp.multiply(gw, xhat, out=gx) if reuse else gw * xhat, axes)
    a = ((0 if gm is None else gm) - invstd * s1) * inv_n
    c = (invstd * s2 + (0 if gi is None else gi) * invstd * invstd) * -inv_n
    dx = gw * invstd if weight is None else xp.multiply(gw, invstd, out=gw)
    dx += a
    xhat *= c
    dx += xhat
    return dx, dw, None if bias_shape is None else sum_to(g, shape=bias_shape)


# -- the compiled float32 form -----------------------------------------------------------------------

def _compiled(x, which):
    if x.dtype.char != "f":
        return None
    return compiled.sized(f"layer_norm_{which}", x.size, NUMBA_MIN, SAVING_S[which], lambda: _source(which),
                          _SIGNATURES[which])


def _source(which):
    """The module of kernel ``which`` alone (the loader keys a module by its text)."""
    return _HEAD + _BODIES[which]


_SIGNATURES = {
    "forward": "void(float32[:, ::1], float32[::1], float32[::1], boolean, boolean, float64, "
               "float32[:, ::1], float32[::1], float32[::1])",
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
"""}
