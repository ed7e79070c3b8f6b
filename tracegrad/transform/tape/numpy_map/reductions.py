"""NumPy's reductions and scans on tracers: sum, prod, mean, max/min, ptp, std/var, argmax,
cumsum/cumprod, average, the NaN-ignoring nan* family, and median / quantile / percentile.

Conventions where NumPy's functions have no derivative:

* max / min / amax / amin / nanmax / nanmin / ptp at ties: the gradient is split evenly
  among the tied elements (as HIPS autograd, JAX and ``torch.amax`` do; ``torch.max(x,
  dim)`` instead gives it all to the index it returns).
* prod with zeros: exact (products of the other elements, no division by x).
* median / quantile / percentile: the order statistics are gathered from a recorded sort,
  so the gradient goes to the element(s) each result interpolates (ties in value: to the
  one the stable sort puts there). NaNs are not looked for (NumPy's median of a slice
  holding a NaN is NaN).
* the nan* functions: NaN elements get a zero gradient; nanmax/nanmin of an all-NaN
  slice is NaN, as in NumPy.
"""
import math

import numpy as np

from ....rules import arrays as A
from .base import (FUNCTIONS, P, TracerError, as_float, astype, cast, dims, is_traced, ndim, npdtype, ravel, register,
                   reshape, shape_of, unsupported, xp_of)
from .construct import traced_array


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
    """The (weighted) mean; with ``returned``, also the sum of the weights (the count
    without weights) broadcast to the mean's shape, as NumPy gives them."""
    a = as_float(a)
    if weights is None:
        avg = FUNCTIONS[np.mean](a, axis=axis, keepdims=keepdims)
        if not returned:
            return avg
        n = math.prod(shape_of(a)) / max(math.prod(shape_of(avg)), 1)
        return avg, xp_of(a).full(shape_of(avg), n, dtype=npdtype(avg))
    if not (is_traced(weights) or hasattr(weights, "shape")):  # a list, perhaps holding tracers
        weights = traced_array(weights, copy=False)
    if shape_of(weights) != tuple(shape_of(a)):
        if axis is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        if ndim(weights) != 1:
            raise TypeError("1D weights expected when shapes of a and weights differ.")
        ax = axis % ndim(a)  # 1-D weights lie along ``axis``
        if shape_of(weights)[0] != shape_of(a)[ax]:
            raise ValueError("Length of weights not compatible with specified axis.")
        weights = reshape(weights, tuple(shape_of(a)[ax] if i == ax else 1 for i in range(ndim(a))))
    d = dims(axis, ndim(a))
    total = P.sum(P.broadcast_to(weights, shape=tuple(shape_of(a))), dim=d, keepdim=keepdims)
    avg = P.div(P.sum(P.mul(a, weights), dim=d, keepdim=keepdims), total)
    if not returned:
        return avg
    return avg, total if shape_of(total) == shape_of(avg) else P.broadcast_to(total, shape=shape_of(avg))


# -- NaN-ignoring reductions -----------------------------------------------------------------

def _floating(a):
    return _kind(a) in "fc"


def _kind(a):
    return npdtype(a).kind


def _filled(a, value):
    """``a`` with its NaNs replaced by ``value`` (which then takes no gradient)."""
    return P.where(P.isnan(a), value, a) if _floating(a) else a


def _nan_version(prim, fill):
    def reduce(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
        if out is not None or kw.pop("initial", None) is not None or kw.pop("where", True) is not True or kw:
            raise unsupported(f"numpy's nan{prim.name} with out=, initial=, where= or other options")
        return cast(prim(_filled(a, fill), dim=dims(axis, ndim(a)), keepdim=keepdims), dtype)
    return reduce


def _nan_extremum(prim, fill):
    def extremum(a, axis=None, out=None, keepdims=False, **kw):
        if out is not None or kw.pop("initial", None) is not None or kw.pop("where", True) is not True or kw:
            raise unsupported(f"numpy's nan{prim.name[1:]} with out=, initial=, where= or other options")
        d = dims(axis, ndim(a))
        if not _floating(a):
            return prim(a, dim=d, keepdim=keepdims)
        found = prim(_filled(a, fill), dim=d, keepdim=keepdims)
        return P.where(P.all(P.isnan(a), dim=d, keepdim=keepdims), np.nan, found)  # all-NaN slices
    return extremum


def _present(a, d, keepdims):
    """How many non-NaN elements each slice holds (no gradient), as ``a``'s float dtype."""
    mask = P.logical_not(P.isnan(a))
    return P.sum(P.indicator(mask, a), dim=d, keepdim=keepdims)


@register(np.nanmean)
def _nanmean(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
    if out is not None or kw.pop("where", True) is not True or kw:
        raise unsupported("numpy.nanmean with out=, where= or other options")
    a = cast(as_float(a), dtype)
    d = dims(axis, ndim(a))
    return P.div(P.sum(_filled(a, 0.0), dim=d, keepdim=keepdims), _present(a, d, keepdims))


def _nan_moment(root):
    def moment(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
        if out is not None or kw.pop("where", True) is not True or kw:
            raise unsupported(f"numpy.nan{'std' if root else 'var'} with out=, where= or other options")
        a = cast(as_float(a), dtype)
        d = dims(axis, ndim(a))
        n = _present(a, d, True)
        centered = _filled(P.sub(a, P.div(P.sum(_filled(a, 0.0), dim=d, keepdim=True), n)), 0.0)
        dof = P.sub(n, ddof)
        dof = P.where(P.gt(dof, 0), dof, np.nan)  # (no degrees of freedom left: NaN, as NumPy)
        var = P.div(P.sum(P.mul(centered, centered), dim=d, keepdim=True), dof)
        if not keepdims:
            var = reshape(var, tuple(s for i, s in enumerate(shape_of(a)) if d is not None and i not in d))
        return P.sqrt(var) if root else var
    return moment


def _nan_scan(scan_of, fill):
    def scan(a, axis=None, dtype=None, out=None):
        return FUNCTIONS[scan_of](_filled(a, fill), axis=axis, dtype=dtype, out=out)
    return scan


@register(np.ptp)
def _ptp(a, axis=None, out=None, keepdims=False):
    if out is not None:
        raise unsupported("numpy.ptp(..., out=...)")
    d = dims(axis, ndim(a))
    return P.sub(P.amax(a, dim=d, keepdim=keepdims), P.amin(a, dim=d, keepdim=keepdims))


# -- order statistics ------------------------------------------------------------------------

_POSITIONS = {  # quantile method -> (lower index, upper index, weight of the upper) at position h
    "linear": lambda h: (np.floor(h), np.ceil(h), h - np.floor(h)),
    "lower": lambda h: (np.floor(h), np.floor(h), 0.0 * h),
    "higher": lambda h: (np.ceil(h), np.ceil(h), 0.0 * h),
    "midpoint": lambda h: (np.floor(h), np.ceil(h), np.where(np.floor(h) == np.ceil(h), 0.0, 0.5)),
    "nearest": lambda h: (np.around(h), np.around(h), 0.0 * h),
}


@register(np.quantile)
def _quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
              weights=None, interpolation=None):
    """Order statistics of a recorded sort, interpolated as ``method`` says; q's dims come
    first in the result, as in NumPy. A traced ``q`` is read (with a guard) to pick the
    order statistics; with the linear method the interpolation weight stays a function of
    it, so the quantile is differentiable in q too."""
    if out is not None or weights is not None:
        raise unsupported("numpy.quantile with out= or weights=")
    method = interpolation or method
    if method not in _POSITIONS:
        raise unsupported(f"numpy.quantile(..., method={method!r})")
    if isinstance(q, (list, tuple)):  # (its numbers may be traced: AST mode traces literals)
        q = np.asarray(q, dtype=np.float64)
    qv = np.asarray(q.tolist() if is_traced(q) else q, dtype=np.float64)
    if np.any((qv < 0) | (qv > 1)):
        raise ValueError("Quantiles must be in the range [0, 1]")
    a = as_float(a)
    shape = tuple(shape_of(a))
    if axis is None:
        flat, d = ravel(a), 0
    else:
        d = dims(axis, ndim(a))
        if len(d) != 1:
            flat, d = _merged(a, d), ndim(a) - len(d)
        else:
            flat, d = a, d[0]
    n = shape_of(flat)[d]
    if n == 0:
        raise IndexError("cannot do a non-empty take from an empty axes.")
    lo, hi, w = _POSITIONS[method](qv.ravel() * (n - 1))
    ordered = A.sort(flat, d)[0]

    def at(positions):
        return P.index_select(ordered, A.index_like(ordered, positions.astype(np.int64)), dim=d)

    along = (-1,) + (1,) * (ndim(ordered) - 1 - d)  # (the q values lie along d)
    if method == "linear" and is_traced(q):
        w = P.sub(P.mul(reshape(astype(q, npdtype(ordered), copy=False), along), float(n - 1)),
                  lo.reshape(along).astype(npdtype(ordered)))
    else:
        w = w.reshape(along).astype(npdtype(ordered))
    values = P.add(at(lo), P.mul(P.sub(at(hi), at(lo)), w))
    values = P.permute(values, dims=(d,) + tuple(i for i in range(ndim(values)) if i != d))
    rest = tuple(s for i, s in enumerate(shape_of(flat)) if i != d)
    if keepdims:
        axes = range(len(shape)) if axis is None else dims(axis, len(shape))
        rest = tuple(1 if i in axes else s for i, s in enumerate(shape))
    return reshape(values, qv.shape + rest)


def _merged(a, d):
    """``a`` with the axes ``d`` moved last and merged into one."""
    keep = [i for i in range(ndim(a)) if i not in d]
    moved = P.permute(a, dims=tuple(keep) + tuple(d))
    return reshape(moved, tuple(shape_of(a)[i] for i in keep) + (math.prod(shape_of(a)[i] for i in d),))


@register(np.percentile)
def _percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
                weights=None, interpolation=None):
    q = P.div(q, 100.0) if is_traced(q) else np.true_divide(np.asarray(q, dtype=np.float64), 100)
    return _quantile(a, q, axis, out, overwrite_input, method, keepdims, weights=weights,
                     interpolation=interpolation)


@register(np.median)
def _median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return _quantile(a, 0.5, axis, out, overwrite_input, "linear", keepdims)


FUNCTIONS.update({
    np.sum: _reduction(P.sum), np.prod: _reduction(P.prod), np.mean: _reduction(P.mean, floaty=True),
    np.max: _reduction(P.amax), np.amax: _reduction(P.amax), np.min: _reduction(P.amin),
    np.amin: _reduction(P.amin), np.all: _reduction(P.all), np.any: _reduction(P.any),
    np.std: _moments(P.std), np.var: _moments(P.var),
    np.argmax: _arg(P.argmax), np.argmin: _arg(P.argmin),
    np.cumsum: _cumulative(P.cumsum), np.cumprod: _cumulative(P.cumprod),
    np.average: _average, np.ptp: _ptp,
    np.nansum: _nan_version(P.sum, 0.0), np.nanprod: _nan_version(P.prod, 1.0),
    np.nanmax: _nan_extremum(P.amax, -np.inf), np.nanmin: _nan_extremum(P.amin, np.inf),
    np.nanvar: _nan_moment(root=False), np.nanstd: _nan_moment(root=True),
    np.nancumsum: _nan_scan(np.cumsum, 0.0), np.nancumprod: _nan_scan(np.cumprod, 1.0),
})
