"""NumPy's reductions and scans on tracers: sum, prod, mean, max/min, std/var, argmax,
cumsum/cumprod, average."""
import numpy as np

from .base import FUNCTIONS, P, TracerError, as_float, cast, dims, ndim, ravel, reshape, shape_of, unsupported, xp_of


def _reduction(prim, floaty=False):
    def reduce(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
        if out is not None:
            raise TracerError(f"numpy.{prim.name}(..., out=...) cannot be traced")
        if kw.pop("initial", None) is not None or kw.pop("where", True) is not True or kw:
            raise unsupported(f"numpy's {prim.name} with initial=, where= or other options")
        a = as_float(a) if floaty else a
        return cast(prim(a, dim=dims(axis, ndim(a)), keepdim=keepdims), dtype)
    return reduce


def _moments(prim):
    def moment(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
        if out is not None or kw:
            raise unsupported(f"numpy's {prim.name} with out=, where= or other options")
        a = cast(as_float(a), dtype)
        return prim(a, dim=dims(axis, ndim(a)), correction=ddof, keepdim=keepdims)
    return moment


def _cumulative(prim):
    def scan(a, axis=None, dtype=None, out=None):
        if axis is None:
            a, axis = ravel(a), 0
        return prim(a, dim=axis % max(ndim(a), 1), dtype=dtype)
    return scan


def _arg(prim):
    def arg(a, axis=None, out=None, keepdims=False):
        if axis is None:
            flat = prim(ravel(a), dim=0, keepdim=False)
            return P.reshape(flat, shape=(1,) * ndim(a)) if keepdims else flat
        return prim(a, dim=axis % ndim(a), keepdim=keepdims)
    return arg


def _average(a, axis=None, weights=None, returned=False, keepdims=False):
    if returned:
        raise unsupported("numpy.average(..., returned=True)")
    if weights is None:
        return FUNCTIONS[np.mean](a, axis=axis, keepdims=keepdims)
    if shape_of(weights) != tuple(a.shape):
        if axis is None or ndim(weights) != 1:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        ax = axis % ndim(a)  # 1-D weights lie along ``axis``
        weights = reshape(weights, tuple(a.shape[ax] if i == ax else 1 for i in range(ndim(a))))
    num = P.sum(P.mul(a, weights), dim=dims(axis, ndim(a)), keepdim=keepdims)
    return P.div(num, P.sum(P.mul(xp_of(a).ones(a.shape), weights), dim=dims(axis, ndim(a)), keepdim=keepdims))


FUNCTIONS.update({
    np.sum: _reduction(P.sum), np.prod: _reduction(P.prod), np.mean: _reduction(P.mean, floaty=True),
    np.max: _reduction(P.amax), np.amax: _reduction(P.amax), np.min: _reduction(P.amin),
    np.amin: _reduction(P.amin), np.all: _reduction(P.all), np.any: _reduction(P.any),
    np.std: _moments(P.std), np.var: _moments(P.var),
    np.argmax: _arg(P.argmax), np.argmin: _arg(P.argmin),
    np.cumsum: _cumulative(P.cumsum), np.cumprod: _cumulative(P.cumprod),
    np.average: _average,
})
