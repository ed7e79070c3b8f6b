"""NumPy's selecting, sorting and writing functions on tracers: take, take_along_axis,
compress, extract, sort / argsort / partition / argpartition, insert, delete, and the
in-place writers put, put_along_axis, place, putmask.

Reads are gathers (``index_select``, ``gather``), so a repeated position accumulates its
gradient. Sorting gathers along the order a recorded ``argsort`` finds, so a replayed
tape sorts its new values. Functions that only move elements around (insert, delete)
are worked out once on labels -- NumPy's own function applied to the positions
``0..n-1`` -- and recorded as one gather of those positions.

An in-place writer changes the array it is given, so it is recorded as ``a[index] =
values`` on that tracer (the tape's aliasing rules then bring its views up to date, see
:mod:`..aliasing`); writing traced values into an array that is not traced is refused,
as ``buf[i] = traced`` is. Where one position is written twice, NumPy keeps the last
value, and so does the gradient: only the surviving write receives one.
"""
import math

import numpy as np

from ....rules import arrays as A
from ..tape import shape_of
from .base import P, TracerError, as_arrays, astype, is_traced, ndim, npdtype, ravel, register, unsupported
from .shapes import _axis, _static


def _host(v):
    """A (possibly traced) index or mask argument as a host array (a traced one is read,
    with a guard, so that the tape is traced again when it changes)."""
    return np.asarray(_static(v))


def _wrapped(indices, n, mode):
    """Indices after NumPy's ``mode``: ``wrap`` (modulo), ``clip``, or ``raise`` (checked)."""
    if mode == "wrap":
        return P.remainder(indices, n) if is_traced(indices) else np.asarray(indices) % n
    if mode == "clip":
        return P.clamp(indices, min=0, max=n - 1) if is_traced(indices) else np.clip(indices, 0, n - 1)
    if not is_traced(indices):
        idx = np.asarray(indices)
        if idx.size and (idx.max() >= n or idx.min() < -n):
            bad = idx.max() if idx.max() >= n else idx.min()
            raise IndexError(f"index {bad} is out of bounds for axis 0 with size {n}")
    return indices


@register(np.take)
def _take(a, indices, axis=None, out=None, mode="raise"):
    if out is not None:
        raise unsupported("numpy.take(..., out=...)")
    a = as_arrays([a])[0]
    if axis is None:
        a, d = ravel(a), 0
    else:
        d = _axis(axis, ndim(a))
    idx = _wrapped(indices if is_traced(indices) else np.asarray(indices), shape_of(a)[d], mode)
    if not is_traced(idx) and np.asarray(idx).dtype.kind not in "iu":
        raise TypeError("Cannot cast array data from dtype('float64') to dtype('int64') "
                        "according to the rule 'safe'")
    return P.index_select(a, idx if is_traced(idx) else A.index_like(a, idx), dim=d)


@register(np.take_along_axis)
def _take_along_axis(arr, indices, axis=-1):
    if axis is None:
        if ndim(indices) != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        arr, axis = ravel(arr), 0
    d = _axis(axis, ndim(arr))
    return A.take_along(arr, indices if is_traced(indices) else A.index_like(arr, indices), d)


@register(np.compress)
def _compress(condition, a, axis=None, out=None):
    keep = np.flatnonzero(_host(condition))
    return _take(a, keep, axis=axis)


@register(np.extract)
def _extract(condition, arr):
    return _take(ravel(as_arrays([arr])[0]), np.flatnonzero(_host(condition)))


# -- sorting -----------------------------------------------------------------------------------

def _along(a, axis):
    """``(a, dim)``: NumPy's ``axis=None`` means the flattened array."""
    a = as_arrays([a])[0]
    if axis is None:
        return ravel(a), 0
    return a, _axis(axis, max(ndim(a), 1))


def _no_order(order, what):
    if order is not None:
        raise unsupported(f"numpy.{what}(..., order=...) (fields of structured arrays)")


@register(np.sort)
def _sort(a, axis=-1, kind=None, order=None, *, stable=None):
    _no_order(order, "sort")
    a, d = _along(a, axis)
    return A.sort(a, d, stable=bool(stable) or kind == "stable")[0]


@register(np.argsort)
def _argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    _no_order(order, "argsort")
    a, d = _along(a, axis)
    return P.argsort(a, dim=d, stable=bool(stable) or kind in ("stable", "mergesort"))


if hasattr(np, "msort"):
    register(np.msort)(lambda a: _sort(a, axis=0))


def _kth(kth):
    kth = _static(kth)
    return tuple(int(k) for k in kth) if isinstance(kth, (list, tuple, np.ndarray)) else int(kth)


@register(np.argpartition)
def _argpartition(a, kth, axis=-1, kind="introselect", order=None):
    _no_order(order, "argpartition")
    a, d = _along(a, axis)
    return P.argpartition(a, kth=_kth(kth), dim=d)


@register(np.partition)
def _partition(a, kth, axis=-1, kind="introselect", order=None):
    _no_order(order, "partition")
    a, d = _along(a, axis)
    return P.gather(a, P.argpartition(a, kth=_kth(kth), dim=d), dim=d)


# -- moving elements by labels -----------------------------------------------------------------

def _by_labels(fn, arr, *rest, axis=None):
    """``fn(arr, *rest, axis=axis)`` for a function that only moves ``arr``'s elements
    (``rest`` static): NumPy's own function run on the positions of ``arr``, then one
    recorded gather of them."""
    arr = as_arrays([arr])[0]
    labels = np.arange(math.prod(shape_of(arr))).reshape(shape_of(arr))
    return A.unflat_take(arr, fn(labels, *rest, axis=axis))


@register(np.delete)
def _delete(arr, obj, axis=None):
    return _by_labels(np.delete, arr, _static(obj), axis=axis)


@register(np.insert)
def _insert(arr, obj, values, axis=None):
    """Positions of ``arr`` are labelled 1.., those of ``values`` -1..; NumPy's insert of
    the labels says where each element of the result comes from."""
    arr, values = as_arrays([arr, values])
    obj = _static(obj)
    n, m = math.prod(shape_of(arr)), math.prod(shape_of(values))
    labels = np.insert(np.arange(1, n + 1).reshape(shape_of(arr)), obj,
                       -np.arange(1, m + 1).reshape(shape_of(values)), axis=axis)
    from_arr = labels > 0
    out_arr = A.unflat_take(arr, np.where(from_arr, labels - 1, 0))
    if from_arr.all():
        return out_arr
    if m == 0:
        raise ValueError("cannot insert an empty array")
    out_val = A.unflat_take(astype(values, npdtype(arr), copy=False), np.where(from_arr, 0, -labels - 1))
    return P.where(from_arr, out_arr, out_val)


# -- writes into a traced array ----------------------------------------------------------------

def _target(a, what):
    if not is_traced(a):
        raise TracerError(
            f"numpy.{what} writes traced values into an array that is not traced, so the "
            "write could not be followed; write into a traced array instead (np.zeros_like(x) "
            "or x.copy() of a traced x is one), or build the result with np.where")
    return a


def _last_writes(flat):
    """The positions of ``flat`` (host ints) that no later entry writes again."""
    flat = np.asarray(flat).ravel()
    _, last = np.unique(flat[::-1], return_index=True)
    return np.sort(flat.size - 1 - last)


def _cycled(values, count, at=None):
    """``values`` flattened and read cyclically: item ``k`` of the result is
    ``values.flat[(at[k] if at is given else k) % values.size]``."""
    values = as_arrays([values])[0]
    size = math.prod(shape_of(values))
    if size == 0:
        raise ValueError("cannot write an empty array of values")
    pos = (np.arange(count) if at is None else np.asarray(at)) % size
    return A.unflat_take(values, pos)


@register(np.put)
def _put(a, ind, v, mode="raise"):
    _target(a, "put")
    size = math.prod(shape_of(a))
    flat = np.asarray(_wrapped(_host(ind), size, mode)).ravel() % max(size, 1)
    keep = _last_writes(flat)
    values = _cycled(v, flat.size, at=keep)
    a[np.unravel_index(flat[keep], shape_of(a))] = values


@register(np.put_along_axis)
def _put_along_axis(arr, indices, values, axis):
    _target(arr, "put_along_axis")
    if axis is None:
        raise unsupported("numpy.put_along_axis(..., axis=None) on a traced array")
    d = _axis(axis, ndim(arr))
    idx = _host(indices)
    if idx.ndim != ndim(arr):
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    coords = list(np.ix_(*[np.arange(s) for s in shape_of(arr)]))
    coords[d] = idx % shape_of(arr)[d]
    coords = np.broadcast_arrays(*coords)
    flat = np.ravel_multi_index(coords, shape_of(arr))
    keep = _last_writes(flat)
    values = as_arrays([values])[0]
    if shape_of(values) != flat.shape:
        values = P.broadcast_to(values, shape=flat.shape)
    arr[np.unravel_index(flat.ravel()[keep], shape_of(arr))] = A.unflat_take(values, keep)


@register(np.place)
def _place(arr, mask, vals):
    _target(arr, "place")
    where = np.broadcast_to(_host(mask).astype(bool), shape_of(arr))
    count = int(where.sum())
    if count:
        arr[np.nonzero(where)] = _cycled(vals, count)


@register(np.putmask)
def _putmask(a, mask, values):
    _target(a, "putmask")
    where = np.broadcast_to(_host(mask).astype(bool), shape_of(a))
    flat = np.flatnonzero(where)
    if flat.size:
        a[np.nonzero(where)] = _cycled(values, flat.size, at=flat)

