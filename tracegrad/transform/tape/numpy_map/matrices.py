"""NumPy's matrix-shaped functions on tracers: diagonals (diag both ways, diagflat,
diagonal, trace), triangles (tril, triu), kron, cross, and differences (diff, ediff1d,
gradient).

They are compositions of the table's rules (diagonal, diagonal_scatter, tril, mul, sub,
cat), shared with the eager functions through :mod:`tracegrad.rules.arrays` where
PyTorch has the same operation."""
import numpy as np

from ....rules import arrays as A
from ..tape import shape_of
from .base import P, as_arrays, astype, cast, is_traced, ndim, ravel, register, unsupported
from .shapes import _axis, _concatenate, _moveaxis

_NO_VALUE = getattr(np, "_NoValue", None)


@register(np.diagonal)
def _diagonal(a, offset=0, axis1=0, axis2=1):
    n = ndim(a)
    if n < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    d1, d2 = _axis(axis1, n), _axis(axis2, n)
    if d1 == d2:
        raise ValueError("axis1 and axis2 cannot be the same")
    return P.diagonal(a, offset=int(offset), dim1=d1, dim2=d2)


@register(np.trace)
def _trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    if out is not None:
        raise unsupported("numpy.trace(..., out=...)")
    d = _diagonal(a, offset, axis1, axis2)
    return cast(P.sum(d, dim=(ndim(d) - 1,), keepdim=False), dtype)


@register(np.diag)
def _diag(v, k=0):
    v = as_arrays([v])[0]
    if ndim(v) == 1:
        return A.diag_embed(v, offset=int(k))
    if ndim(v) == 2:
        return P.diagonal(v, offset=int(k), dim1=0, dim2=1)
    raise ValueError("Input must be 1- or 2-d.")


@register(np.diagflat)
def _diagflat(v, k=0):
    return A.diag_embed(ravel(as_arrays([v])[0]), offset=int(k))


def _triangle(prim):
    def triangle(m, k=0):
        m = as_arrays([m])[0]
        if ndim(m) < 2:  # NumPy masks a vector as the rows of a square matrix
            n = shape_of(m)[-1] if ndim(m) else 1
            m = P.broadcast_to(m, shape=(n, n))
        return prim(m, diagonal=int(k))
    return triangle


register(np.tril)(_triangle(P.tril))
register(np.triu)(_triangle(P.triu))


@register(np.kron)
def _kron(a, b):
    a, b = as_arrays([a, b])
    return A.kron(a, b)


@register(np.cross)
def _cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """NumPy's cross product of 3-vectors (or 2-vectors, taken as having z = 0; two
    2-vectors give the z component alone) along any axes of ``a``, ``b`` and the result."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = as_arrays([a, b])
    a, b = _moveaxis(a, axisa, -1), _moveaxis(b, axisb, -1)
    na, nb = shape_of(a)[-1], shape_of(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    if na == 2 and nb == 2:
        def part(v, i):
            return P.basic_index(v, index=(Ellipsis, i))
        return P.sub(P.mul(part(a, 0), part(b, 1)), P.mul(part(a, 1), part(b, 0)))
    if na == 2:
        a = P.constant_pad_nd(a, pad=(0, 1))
    if nb == 2:
        b = P.constant_pad_nd(b, pad=(0, 1))
    out = A.cross(a, b, dim=-1)
    return _moveaxis(out, -1, _axis(axisc, ndim(out)))


def _edge(value, a, d):
    """A prepend/append value of ``diff``: a scalar broadcast to one slice along ``d``."""
    value = as_arrays([value])[0]
    if ndim(value) == 0:
        shape = tuple(1 if i == d else s for i, s in enumerate(shape_of(a)))
        value = P.broadcast_to(value, shape=shape)
    return value


@register(np.diff)
def _diff(a, n=1, axis=-1, prepend=_NO_VALUE, append=_NO_VALUE):
    a = as_arrays([a])[0]
    if n == 0:
        return a
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    if ndim(a) == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    d = _axis(axis, ndim(a))
    pieces = [a]
    if prepend is not _NO_VALUE:
        pieces.insert(0, _edge(prepend, a, d))
    if append is not _NO_VALUE:
        pieces.append(_edge(append, a, d))
    if len(pieces) > 1:
        a = _concatenate(pieces, axis=d)
    if np.dtype(_dtype(a)).kind == "b":
        raise unsupported("numpy.diff of booleans (a not_equal, with no derivative)")
    return A.diff(a, int(n), d)


def _dtype(a):
    return a.npdtype if is_traced(a) else np.asarray(a).dtype


@register(np.ediff1d)
def _ediff1d(ary, to_end=None, to_begin=None):
    pieces = [A.diff(ravel(as_arrays([ary])[0]), 1, 0)]
    if to_begin is not None:
        pieces.insert(0, ravel(as_arrays([to_begin])[0]))
    if to_end is not None:
        pieces.append(ravel(as_arrays([to_end])[0]))
    return pieces[0] if len(pieces) == 1 else _concatenate(pieces, axis=0)


@register(np.gradient)
def _gradient(f, *varargs, axis=None, edge_order=1):
    """NumPy's gradient with uniform spacing: central differences inside, one-sided ones
    (first or second order) at the edges; one array per axis asked for."""
    f = as_arrays([f])[0]
    n = ndim(f)
    axes = list(range(n)) if axis is None else [_axis(a, n) for a in (axis if isinstance(axis, (tuple, list)) else (axis,))]
    if len(varargs) not in (0, 1, len(axes)):
        raise TypeError("invalid number of arguments")
    spacing = list(varargs) * (len(axes) if len(varargs) == 1 else 1) if varargs else [1.0] * len(axes)
    if any(np.ndim(h) for h in spacing if not is_traced(h)) or any(is_traced(h) and ndim(h) for h in spacing):
        raise unsupported("numpy.gradient with coordinate arrays (only uniform spacings)")
    if edge_order not in (1, 2):
        raise ValueError("'edge_order' greater than 2 not supported")
    if _dtype(f).kind in "iub":
        f = astype(f, np.float64, copy=False)
    out = [_gradient_along(f, d, h, edge_order) for d, h in zip(axes, spacing)]
    return out[0] if len(out) == 1 else tuple(out)


def _gradient_along(f, d, h, edge_order):
    size = shape_of(f)[d]
    if size < edge_order + 1:
        raise ValueError("Shape of array too small to calculate a numerical gradient, at least "
                         "(edge_order + 1) elements are required.")

    def at(i):  # the slice at position i, kept as a dim of size 1
        return A.slice_along(f, d, i, i + 1 or None)
    inner = P.div(P.sub(A.slice_along(f, d, 2, None), A.slice_along(f, d, 0, -2)), P.mul(h, 2.0))
    if edge_order == 1:
        first = P.div(P.sub(at(1), at(0)), h)
        last = P.div(P.sub(at(-1), at(-2)), h)
    else:
        first = P.div(P.add(P.add(P.mul(at(0), -1.5), P.mul(at(1), 2.0)), P.mul(at(2), -0.5)), h)
        last = P.div(P.add(P.add(P.mul(at(-3), 0.5), P.mul(at(-2), -2.0)), P.mul(at(-1), 1.5)), h)
    return _concatenate([first, inner, last], axis=d)


# -- NumPy 2's array-API spellings in numpy.linalg (on the last two axes) ----------------------

def _last_two(fn):
    def on_matrices(x, *, offset=0, **kw):
        return fn(x, offset, -2, -1, **kw)
    return on_matrices


def _linalg_cross(x1, x2, /, *, axis=-1):
    if shape_of(x1)[axis] != 3 or shape_of(x2)[axis] != 3:
        raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors")
    return _cross(x1, x2, axis=axis)


for _name, _fn in (("diagonal", _last_two(_diagonal)), ("trace", _last_two(_trace)),
                   ("cross", _linalg_cross)):
    if hasattr(np.linalg, _name):
        register(getattr(np.linalg, _name))(_fn)
if hasattr(np.linalg, "matrix_transpose"):
    from .shapes import _matrix_transpose
    register(np.linalg.matrix_transpose)(_matrix_transpose)
