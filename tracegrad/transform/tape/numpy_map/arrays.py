"""NumPy's array-making and selecting functions on tracers: where, select, clip,
nan_to_num, real_if_close, the ``*_like`` constructors, and the metadata queries (ndim,
shape, size, result_type)."""
import math

import numpy as np

from .base import FUNCTIONS, P, as_arrays, astype, constant, is_traced, ndim, npdtype, register, shape_of, unsupported, xp_of


def _clip(a, a_min=None, a_max=None, out=None, min=None, max=None, **kw):
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    if is_traced(lo) or is_traced(hi) or hasattr(lo, "shape") or hasattr(hi, "shape"):
        # array (or traced) bounds: ``a`` where it lies within them, ties included, as with
        # number bounds (clamp) and PyTorch's clamp of tensors -- a bound's derivative only
        # where it is strictly the result
        out = a
        if lo is not None:
            out = P.where(P.lt(out, lo), lo, out)
        if hi is not None:
            out = P.where(P.gt(out, hi), hi, out)
        return out
    return P.clamp(a, min=lo, max=hi)


def _where(condition, x=None, y=None):
    if x is None and y is None:
        raise unsupported("numpy.where(condition) (the one-argument form, a data-dependent shape)")
    from .construct import traced_array  # (lists, of traced values too, as NumPy's arrays)
    condition, x, y = (traced_array(v, copy=False) if type(v) in (list, tuple) else v
                       for v in (condition, x, y))
    return P.where(condition, x, y)


@register(np.select)
def _select(condlist, choicelist, default=0):
    """The first choice whose condition holds, else ``default``: ``where``s nested from
    the last condition outwards, in the dtype NumPy gives the choices and the default."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if not condlist:
        raise ValueError("select with an empty condition list is not possible")
    choices = as_arrays(list(choicelist) + [default])
    dtype = np.result_type(*[npdtype(c) if is_traced(c) or hasattr(c, "dtype") else c
                             for c in list(choicelist) + [default]])
    out = astype(choices[-1], dtype, copy=False)
    for cond, choice in zip(reversed(condlist), reversed(choices[:-1])):
        if npdtype(cond).kind != "b":
            raise TypeError("invalid entry in condlist: should be boolean ndarray")
        out = P.where(cond, astype(choice, dtype, copy=False), out)
    shape = np.broadcast_shapes(*[np.shape(c) if not is_traced(c) else c.shape for c in list(condlist) + choices])
    return out if tuple(out.shape) == shape else P.broadcast_to(out, shape=shape)


@register(np.nan_to_num)
def _nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NaN and infinities replaced (by ``where``: the gradient flows where ``x`` was
    finite); complex values part by part."""
    kind = npdtype(x).kind
    if kind == "c":
        parts = [_nan_to_num(P.real(x), True, nan, posinf, neginf),
                 _nan_to_num(P.imag(x), True, nan, posinf, neginf)]
        return P.complex(*parts)
    if kind not in "f":
        return P.clone(x) if copy else x
    info = np.finfo(npdtype(x))
    out = P.where(P.isnan(x), np.asarray(nan, dtype=npdtype(x)), x)
    out = P.where(P.eq(x, np.inf), np.asarray(info.max if posinf is None else posinf, dtype=npdtype(x)), out)
    return P.where(P.eq(x, -np.inf), np.asarray(info.min if neginf is None else neginf, dtype=npdtype(x)), out)


@register(np.real_if_close)
def _real_if_close(a, tol=100):
    """The real part when every imaginary part is within ``tol`` machine epsilons of 0
    (decided on the values, with a guard), else ``a`` unchanged."""
    if npdtype(a).kind != "c":
        return a
    eps = np.finfo(npdtype(a)).eps
    bound = tol * eps if tol > 1 else tol
    if bool(P.all(P.lt(P.abs(P.imag(a)), bound))):
        return P.real(a)
    return a


def _like(fill):
    def like(a, dtype=None, order="K", subok=True, shape=None, **kw):
        return constant(a, xp_of(a).full(a.shape if shape is None else shape, fill, dtype=dtype or npdtype(a)))
    return like


def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **kw):
    """``a``'s shape filled with ``fill_value``; a traced fill is broadcast in, recorded."""
    shape = tuple(shape_of(a)) if shape is None else shape
    dtype = dtype or npdtype(a)
    if is_traced(fill_value):
        return P.add(constant(a, xp_of(a).zeros(shape, dtype=dtype)), astype(fill_value, dtype, copy=False))
    return constant(a, xp_of(a).full(shape, fill_value, dtype=dtype))


def _ndim_fn(a):
    return ndim(a)


def _shape_fn(a):
    return tuple(a.shape)


def _size_fn(a, axis=None):
    return math.prod(a.shape) if axis is None else a.shape[axis]


def _result_type(*arrays_and_dtypes):
    return np.result_type(*[npdtype(x) if hasattr(x, "shape") else x for x in arrays_and_dtypes])


FUNCTIONS.update({
    np.where: _where, np.clip: _clip,
    np.zeros_like: _like(0), np.ones_like: _like(1), np.empty_like: _like(0), np.full_like: _full_like,
    np.result_type: _result_type, np.ndim: _ndim_fn, np.shape: _shape_fn, np.size: _size_fn,
})


@register(np.linspace)
def _linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    """NumPy's ``arange(num) * step + start`` (``(arange(num) / div) * delta`` where a step
    underflows to 0), the last value exactly ``stop`` when ``endpoint``, traced ends
    broadcast as NumPy does, and integer results rounded down."""
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    start, stop = as_arrays([start, stop])
    start, stop = (astype(v, np.float64, copy=False) if npdtype(v).kind in "biu" else v for v in (start, stop))
    div = (num - 1) if endpoint else num
    delta = P.sub(stop, start)
    steps = np.arange(num, dtype=np.result_type(npdtype(delta), np.float64)).reshape((num,) + (1,) * ndim(delta))
    step = P.div(delta, div) if div > 0 else None
    if step is None or bool(P.any(P.eq(step, 0))):  # (a guard: the tape is traced again if it changes)
        y = P.mul(steps / div, delta) if div > 0 else P.mul(steps, delta)
    else:
        y = P.mul(steps, step)
    y = P.add(y, start)
    if endpoint and num > 1:
        last = np.arange(num).reshape(steps.shape) == num - 1
        y = P.where(last, P.broadcast_to(stop, shape=tuple(y.shape)), y)
    if axis != 0:
        from .shapes import _moveaxis
        y = _moveaxis(y, 0, axis)
    if dtype is not None:
        if np.dtype(dtype).kind in "iu":
            y = P.floor(y)
        y = astype(y, dtype, copy=False)
    if retstep:
        return y, (step if step is not None else np.nan)
    return y


# -- comparisons of whole arrays: no derivative; a Python bool of traced values is a guard --------

@register(np.isclose)
def _isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """NumPy's ``|a - b| <= atol + rtol |b|``, equal infinities included."""
    close = P.logical_or(P.le(P.abs(P.sub(a, b)), P.add(atol, P.mul(rtol, P.abs(b)))), P.eq(a, b))
    if equal_nan:
        close = P.logical_or(close, P.logical_and(P.isnan(a), P.isnan(b)))
    return close


@register(np.allclose)
def _allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(P.all(_isclose(a, b, rtol, atol, equal_nan)))


@register(np.array_equal)
def _array_equal(a1, a2, equal_nan=False):
    if tuple(shape_of(a1)) != tuple(shape_of(a2)):
        return False
    same = P.eq(a1, a2)
    if equal_nan:
        same = P.logical_or(same, P.logical_and(P.isnan(a1), P.isnan(a2)))
    return bool(P.all(same))


@register(np.round, getattr(np, "around", None))
def _round(a, decimals=0, out=None):
    if out is not None:
        raise unsupported("numpy.round(..., out=...)")
    return P.round(a, decimals=decimals)
