"""NumPy's array-making and selecting functions on tracers: where, clip, the ``*_like``
constructors, and the metadata queries (ndim, shape, size, result_type)."""
import math

import numpy as np

from .base import FUNCTIONS, P, constant, is_traced, ndim, npdtype, unsupported, xp_of


def _clip(a, a_min=None, a_max=None, out=None, min=None, max=None, **kw):
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    if is_traced(lo) or is_traced(hi) or hasattr(lo, "shape") or hasattr(hi, "shape"):
        out = a
        if lo is not None:
            out = P.maximum(out, lo)
        if hi is not None:
            out = P.minimum(out, hi)
        return out
    return P.clamp(a, min=lo, max=hi)


def _where(condition, x=None, y=None):
    if x is None and y is None:
        raise unsupported("numpy.where(condition) (the one-argument form, a data-dependent shape)")
    return P.where(condition, x, y)


def _like(fill):
    def like(a, dtype=None, order="K", subok=True, shape=None, **kw):
        return constant(a, xp_of(a).full(a.shape if shape is None else shape, fill, dtype=dtype or npdtype(a)))
    return like


def _full_like(a, fill_value, dtype=None, **kw):
    return constant(a, xp_of(a).full(a.shape, fill_value, dtype=dtype or npdtype(a)))


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
