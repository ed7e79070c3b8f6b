"""NumPy's API on tracers: which rule-table primitive each NumPy function, ufunc and
ndarray method records.

Plain NumPy code reaches the tracer through ``__array_ufunc__`` (ufunc calls and
reductions) and ``__array_function__`` (everything else); both look the function up
here. Anything not here raises an error naming the NumPy function, so a function the
table cannot differentiate never silently becomes a constant.
"""
import math

import numpy as np

from ...rules import TABLE
from .tape import TracerError, shape_of


class _Table:
    """``P.tanh`` is ``TABLE["tanh"]``: the primitives, by name."""

    def __getattr__(self, name):
        try:
            return TABLE[name]
        except KeyError:
            raise AttributeError(name) from None


P = _Table()

__all__ = ["UFUNCS", "FUNCTIONS", "call_ufunc", "call_function", "dims", "unsupported"]


def unsupported(what):
    return TracerError(
        f"{what} cannot be traced onto a tape: the rule table has no entry for it. Write "
        "it with differentiable NumPy functions (see tracegrad.transform.tape.numpy_map), or "
        "register a rule with tracegrad.custom_vjp")


def dims(axis, ndim):
    """NumPy's ``axis`` (None, int or tuple, negatives allowed) as the table's ``dim``."""
    if axis is None:
        return None
    if ndim == 0 and not isinstance(axis, (tuple, list)) and int(axis) in (0, -1):
        return None  # (NumPy's allowance for a 0-d input: an int axis 0 or -1, not (0,))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < max(ndim, 1):
            raise np.exceptions.AxisError(a, ndim)
        out.append(a % max(ndim, 1))
    return tuple(sorted(out))


def npdtype(x):
    """The NumPy dtype of a tracer, array (of any device) or number."""
    d = getattr(x, "npdtype", None)
    if d is not None:
        return d
    d = getattr(x, "dtype", None)  # (a device array: read, never handed to NumPy)
    return d if isinstance(d, np.dtype) else np.result_type(x)


def _float(x):
    """Integers and bools computed as float64, as NumPy's mean/std/var do."""
    return x.astype(np.float64) if npdtype(x).kind in "biu" else x


# -- ufuncs --------------------------------------------------------------------------------

UFUNCS = {p.ufunc: p for p in TABLE.values() if p.ufunc and not p.name.endswith("_")}
UFUNCS.update({
    "divide": P.div, "greater": P.gt, "greater_equal": P.ge, "less": P.lt, "less_equal": P.le,
    "equal": P.eq, "not_equal": P.ne, "arctan2": P.atan2, "floor_divide": P.floor_divide,
    "remainder": P.remainder, "logical_and": P.logical_and, "logical_or": P.logical_or,
    "logical_xor": P.logical_xor, "logical_not": P.logical_not, "matmul": P.matmul,
    "isnan": P.isnan, "isinf": P.isinf, "isfinite": P.isfinite,
})
_UFUNC_EXTRA = {
    "square": lambda x: P.mul(x, x),
    "positive": lambda x: x,
    "conjugate": lambda x: x,
    "rint": lambda x: P.round(x, decimals=0),
    "logaddexp": lambda x, y: _logaddexp(x, y),
    "fabs": lambda x: P.abs(x),
    "cbrt": lambda x: P.mul(P.sign(x), P.pow(P.abs(x), 1.0 / 3.0)),
    "deg2rad": lambda x: P.mul(x, math.pi / 180), "radians": lambda x: P.mul(x, math.pi / 180),
    "rad2deg": lambda x: P.mul(x, 180 / math.pi), "degrees": lambda x: P.mul(x, 180 / math.pi),
    "hypot": lambda x, y: P.sqrt(P.add(P.mul(x, x), P.mul(y, y))),
}
_REDUCE = {"add": P.sum, "multiply": P.prod, "maximum": P.amax, "minimum": P.amin,
           "logical_and": P.all, "logical_or": P.any}


def _logaddexp(x, y):
    m = P.maximum(x, y)
    return P.add(m, P.log(P.add(P.exp(P.sub(x, m)), P.exp(P.sub(y, m)))))


def call_ufunc(ufunc, method, inputs, kwargs):
    name = ufunc.__name__
    out = kwargs.pop("out", None)
    if out is not None and any(o is not None for o in out):
        raise TracerError(f"numpy.{name}(..., out=...) writes into an existing array, which a "
                          f"tape cannot record; assign the result instead (y = np.{name}(...))")
    dtype = kwargs.pop("dtype", None)
    if method == "reduce":
        prim = _REDUCE.get(name)
        if prim is None:
            raise unsupported(f"numpy.{name}.reduce")
        x, = inputs
        axis = kwargs.pop("axis", 0)
        keepdims = kwargs.pop("keepdims", False)
        _no_more(kwargs, f"numpy.{name}.reduce")
        return _cast(prim(x, dim=dims(axis, x.ndim), keepdim=keepdims), dtype)
    if method != "__call__":
        raise unsupported(f"numpy.{name}.{method}")
    if kwargs.pop("where", True) is not True:
        raise unsupported(f"numpy.{name}(..., where=...)")
    kwargs.pop("casting", None), kwargs.pop("order", None), kwargs.pop("subok", None)
    _no_more(kwargs, f"numpy.{name}")
    fn = UFUNCS.get(name) or _UFUNC_EXTRA.get(name)
    if fn is None:
        raise unsupported(f"numpy.{name}")
    return _cast(fn(*inputs), dtype)


def _no_more(kwargs, what):
    if kwargs:
        raise unsupported(f"{what} with {', '.join(sorted(kwargs))}=")


def _cast(x, dtype):
    if dtype is None:
        return x
    return astype(x, dtype)


def astype(x, dtype, copy=True):
    dtype = np.dtype(dtype)
    if npdtype(x) == dtype:
        return P.clone(x) if copy else x
    return P.cast(x, dtype=dtype, src_dtype=npdtype(x))


# -- functions -------------------------------------------------------------------------------

def _reduction(prim, floaty=False):
    def reduce(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
        if out is not None:
            raise TracerError(f"numpy.{prim.name}(..., out=...) cannot be traced")
        if kw.pop("initial", None) is not None or kw.pop("where", True) is not True or kw:
            raise unsupported(f"numpy's {prim.name} with initial=, where= or other options")
        a = _float(a) if floaty else a
        return _cast(prim(a, dim=dims(axis, _ndim(a)), keepdim=keepdims), dtype)
    return reduce


def _ndim(a):
    return len(shape_of(a))


def _moments(prim):
    def moment(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
        if out is not None or kw:
            raise unsupported(f"numpy's {prim.name} with out=, where= or other options")
        a = _cast(_float(a), dtype)
        return prim(a, dim=dims(axis, _ndim(a)), correction=ddof, keepdim=keepdims)
    return moment


def _reshape(a, *shape, newshape=None, order="C", **kw):
    shape = shape[0] if len(shape) == 1 else shape
    if newshape is not None:
        shape = newshape
    shape = kw.pop("shape", shape)
    if order != "C":
        raise unsupported(f"numpy.reshape(..., order={order!r})")
    shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        size = math.prod(a.shape)
        shape = tuple(size // known if s == -1 and known else s for s in shape)
    return P.reshape(a, shape=shape)


def _transpose(a, axes=None):
    n = _ndim(a)
    if axes is None:
        axes = tuple(reversed(range(n)))
    return P.permute(a, dims=tuple(int(d) % max(n, 1) for d in axes))


def _swapaxes(a, axis1, axis2):
    n = _ndim(a)
    return P.transpose(a, dim0=axis1 % n, dim1=axis2 % n)


def _moveaxis(a, source, destination):
    n = _ndim(a)
    src = [s % n for s in (source if isinstance(source, (tuple, list)) else (source,))]
    dst = [d % n for d in (destination if isinstance(destination, (tuple, list)) else (destination,))]
    order = [i for i in range(n) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return P.permute(a, dims=tuple(order))


def _expand_dims(a, axis):
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    n = _ndim(a) + len(axes)
    for ax in sorted(ax % n for ax in axes):
        a = P.unsqueeze(a, dim=ax)
    return a


def _squeeze(a, axis=None):
    return P.squeeze(a, dim=None if axis is None else dims(axis, _ndim(a)))


def _ravel(a, order="C"):
    return P.reshape(a, shape=(math.prod(shape_of(a)),))


def _arrays(arrays):
    """A sequence of operands to join, Python numbers among them made the 0-d arrays
    NumPy makes of them."""
    return [a if _is_traced(a) or hasattr(a, "shape") else np.asarray(a) for a in arrays]


def _concatenate(arrays, axis=0, out=None, dtype=None, **kw):
    arrays = _arrays(arrays)
    if axis is None:
        arrays, axis = [_ravel(x) for x in arrays], 0
    return _cast(P.cat(*arrays, dim=axis % _ndim(arrays[0])), dtype)


def _stack(arrays, axis=0, out=None, dtype=None, **kw):
    arrays = _arrays(arrays)
    return _cast(P.stack(*arrays, dim=axis % (_ndim(arrays[0]) + 1)), dtype)


def _atleast(n):
    def grow(a):
        a = _arrays([a])[0]
        while _ndim(a) < n:
            a = P.unsqueeze(a, dim=0 if n < 3 or _ndim(a) == 0 else _ndim(a))
        return a
    return grow


def _hstack(arrays, **kw):
    arrays = [_atleast(1)(a) for a in _arrays(arrays)]
    return _concatenate(arrays, axis=0 if _ndim(arrays[0]) == 1 else 1)


def _vstack(arrays, **kw):
    return _concatenate([_atleast(2)(a) for a in _arrays(arrays)], axis=0)


def _clip(a, a_min=None, a_max=None, out=None, min=None, max=None, **kw):
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    if _is_traced(lo) or _is_traced(hi) or hasattr(lo, "shape") or hasattr(hi, "shape"):
        out = a
        if lo is not None:
            out = P.maximum(out, lo)
        if hi is not None:
            out = P.minimum(out, hi)
        return out
    return P.clamp(a, min=lo, max=hi)


def _is_traced(x):
    from .tape import Var
    return isinstance(x, Var)


def _where(condition, x=None, y=None):
    if x is None and y is None:
        raise unsupported("numpy.where(condition) (the one-argument form, a data-dependent shape)")
    return P.where(condition, x, y)


def _dot(a, b, out=None):
    na, nb = _ndim(a), _ndim(b)
    if na == 0 or nb == 0:
        return P.mul(a, b)
    if na == 1 and nb == 1:
        return P.dot(a, b)
    if nb <= 2:
        return P.matmul(a, b)
    return P.einsum(a, b, equation=_dot_equation(na, nb))


def _dot_equation(na, nb):
    letters = "abcdefghijklmnopqrstuvwxyz"
    la, lb = letters[:na], letters[na:na + nb]
    lb = lb[:-2] + la[-1] + lb[-1]
    return f"{la},{lb}->{la[:-1]}{lb[:-2]}{lb[-1]}"


def _outer(a, b, out=None):
    return P.mul(P.unsqueeze(_ravel(a), dim=1), P.unsqueeze(_ravel(b), dim=0))


def _inner(a, b):
    if _ndim(a) == 0 or _ndim(b) == 0:
        return P.mul(a, b)
    return _tensordot(a, b, axes=([-1], [-1]))


def _tensordot(a, b, axes=2):
    na, nb = _ndim(a), _ndim(b)
    if isinstance(axes, int):
        ax_a, ax_b = list(range(na - axes, na)), list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [x % na for x in (ax_a if isinstance(ax_a, (list, tuple)) else [ax_a])]
        ax_b = [x % nb for x in (ax_b if isinstance(ax_b, (list, tuple)) else [ax_b])]
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    sa = [next(letters) for _ in range(na)]
    sb = [next(letters) for _ in range(nb)]
    for i, j in zip(ax_a, ax_b):
        sb[j] = sa[i]
    out = [c for i, c in enumerate(sa) if i not in ax_a] + [c for j, c in enumerate(sb) if j not in ax_b]
    return P.einsum(a, b, equation=f"{''.join(sa)},{''.join(sb)}->{''.join(out)}")


def _einsum(subscripts, *operands, optimize=False, **kw):
    if not isinstance(subscripts, str):
        raise unsupported("numpy.einsum in its interleaved form")
    return P.einsum(*operands, equation=subscripts.replace(" ", ""))


def _xp(a):
    from ...backend import namespace_of
    return namespace_of(a.value) if _is_traced(a) else namespace_of(a)


def _constant(a, value):
    """A constant made from a traced ``a`` (its values do not depend on ``a``'s): a traced
    constant, so that ``out = np.zeros_like(x); out[i] = ...`` can be recorded."""
    if _is_traced(a):
        from .tracing import active_tape
        return active_tape().new_var(value, "const")
    return value


def _like(fill):
    def like(a, dtype=None, order="K", subok=True, shape=None, **kw):
        return _constant(a, _xp(a).full(a.shape if shape is None else shape, fill, dtype=dtype or npdtype(a)))
    return like


def _full_like(a, fill_value, dtype=None, **kw):
    return _constant(a, _xp(a).full(a.shape, fill_value, dtype=dtype or npdtype(a)))


def _cumulative(prim):
    def scan(a, axis=None, dtype=None, out=None):
        if axis is None:
            a, axis = _ravel(a), 0
        return prim(a, dim=axis % max(_ndim(a), 1), dtype=dtype)
    return scan


def _flip(m, axis=None):
    axes = tuple(range(_ndim(m))) if axis is None else dims(axis, _ndim(m))
    return P.flip(m, dims=axes) if axes else m


def _roll(a, shift, axis=None):
    if axis is None:
        return _reshape(P.roll(_ravel(a), shifts=(shift,), dims=(0,)), a.shape)
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    return P.roll(a, shifts=tuple(shifts), dims=tuple(x % _ndim(a) for x in axes))


def _tile(a, reps):
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    while _ndim(a) < len(reps):
        a = P.unsqueeze(a, dim=0)
    reps = (1,) * (_ndim(a) - len(reps)) + reps
    return P.repeat(a, repeats=reps)


def _diagonal(a, offset=0, axis1=0, axis2=1):
    return P.diagonal(a, offset=offset, dim1=axis1 % _ndim(a), dim2=axis2 % _ndim(a))


def _trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    return P.sum(_diagonal(a, offset, axis1, axis2), dim=(_ndim(a) - 2,), keepdim=False)


def _split(ary, indices_or_sections, axis=0, unequal=False):
    n = ary.shape[axis % _ndim(ary)]
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        if n % k and not unequal:
            raise ValueError("array split does not result in an equal division")
        sizes = tuple(n // k + (1 if i < n % k else 0) for i in range(k))
    else:
        bounds = [0] + [int(i) for i in indices_or_sections] + [n]
        sizes = tuple(max(b - a, 0) for a, b in zip(bounds, bounds[1:]))
    return list(P.split(ary, sizes=sizes, dim=axis % _ndim(ary)))


def _norm(x, ord=None, axis=None, keepdims=False):
    matrix = (isinstance(axis, (tuple, list)) and len(axis) == 2) or (
        axis is None and ord is not None and _ndim(x) >= 2)
    if matrix or ord not in (None, 2, 1, math.inf, -math.inf, 0):
        raise unsupported(f"numpy.linalg.norm(..., ord={ord!r}, axis={axis!r}) (only vector norms)")
    return P.vector_norm(_float(x), ord=2 if ord is None else ord, dim=dims(axis, _ndim(x)), keepdim=keepdims)


def _arg(prim):
    def arg(a, axis=None, out=None, keepdims=False):
        if axis is None:
            flat = prim(_ravel(a), dim=0, keepdim=False)
            return P.reshape(flat, shape=(1,) * _ndim(a)) if keepdims else flat
        return prim(a, dim=axis % _ndim(a), keepdim=keepdims)
    return arg


def _average(a, axis=None, weights=None, returned=False, keepdims=False):
    if returned:
        raise unsupported("numpy.average(..., returned=True)")
    if weights is None:
        return FUNCTIONS[np.mean](a, axis=axis, keepdims=keepdims)
    if shape_of(weights) != tuple(a.shape):
        if axis is None or _ndim(weights) != 1:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        ax = axis % _ndim(a)  # 1-D weights lie along ``axis``
        weights = _reshape(weights, tuple(a.shape[ax] if i == ax else 1 for i in range(_ndim(a))))
    num = P.sum(P.mul(a, weights), dim=dims(axis, _ndim(a)), keepdim=keepdims)
    return P.div(num, P.sum(P.mul(_xp(a).ones(a.shape), weights), dim=dims(axis, _ndim(a)), keepdim=keepdims))


def _tril(m, k=0):
    return P.tril(m, diagonal=k)


def _triu(m, k=0):
    return P.triu(m, diagonal=k)


def _take(a, indices, axis=None):
    if axis is None:
        a, axis = _ravel(a), 0
    return P.index_select(a, _xp(a).asarray(indices), dim=axis % _ndim(a))


def _broadcast_to(array, shape, subok=False):
    return P.broadcast_to(array, shape=(shape,) if isinstance(shape, int) else tuple(shape))


def _copy(a, order="K", subok=False):
    return P.clone(a)


def _ndim_fn(a):
    return _ndim(a)


def _shape_fn(a):
    return tuple(a.shape)


def _size_fn(a, axis=None):
    return math.prod(a.shape) if axis is None else a.shape[axis]


def _result_type(*arrays_and_dtypes):
    return np.result_type(*[npdtype(x) if hasattr(x, "shape") else x for x in arrays_and_dtypes])


FUNCTIONS = {
    np.sum: _reduction(P.sum), np.prod: _reduction(P.prod), np.mean: _reduction(P.mean, floaty=True),
    np.max: _reduction(P.amax), np.amax: _reduction(P.amax), np.min: _reduction(P.amin),
    np.amin: _reduction(P.amin), np.all: _reduction(P.all), np.any: _reduction(P.any),
    np.std: _moments(P.std), np.var: _moments(P.var),
    np.argmax: _arg(P.argmax), np.argmin: _arg(P.argmin),
    np.cumsum: _cumulative(P.cumsum), np.cumprod: _cumulative(P.cumprod),
    np.dot: _dot, np.matmul: lambda a, b, **kw: P.matmul(a, b), np.vdot: lambda a, b: P.vdot(_ravel(a), _ravel(b)),
    np.outer: _outer, np.inner: _inner, np.tensordot: _tensordot, np.einsum: _einsum,
    np.where: _where, np.clip: _clip,
    np.reshape: _reshape, np.transpose: _transpose, np.swapaxes: _swapaxes, np.moveaxis: _moveaxis,
    np.expand_dims: _expand_dims, np.squeeze: _squeeze, np.ravel: _ravel,
    np.concatenate: _concatenate, np.stack: _stack, np.hstack: _hstack, np.vstack: _vstack,
    np.atleast_1d: _atleast(1), np.atleast_2d: _atleast(2),
    np.zeros_like: _like(0), np.ones_like: _like(1), np.empty_like: _like(0), np.full_like: _full_like,
    np.broadcast_to: _broadcast_to, np.copy: _copy, np.flip: _flip, np.roll: _roll, np.tile: _tile,
    np.diagonal: _diagonal, np.trace: _trace, np.split: _split,
    np.array_split: lambda ary, sections, axis=0: _split(ary, sections, axis, unequal=True),
    np.linalg.norm: _norm, np.average: _average, np.tril: _tril, np.triu: _triu, np.take: _take,
    np.result_type: _result_type, np.ndim: _ndim_fn, np.shape: _shape_fn, np.size: _size_fn,
    np.linalg.matmul if hasattr(np.linalg, "matmul") else np.matmul: lambda a, b, **kw: P.matmul(a, b),
}


def call_function(func, args, kwargs):
    fn = FUNCTIONS.get(func)
    if fn is None:
        mod = getattr(func, "__module__", "numpy") or "numpy"
        raise unsupported(f"{mod.replace('numpy.lib', 'numpy').split('._')[0]}.{func.__name__}")
    return fn(*args, **kwargs)
