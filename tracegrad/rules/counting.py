"""Searching and counting: the kernels behind ``searchsorted``/``bucketize``, ``unique``,
``unique_consecutive``, ``bincount``, ``histc`` and ``histogram``.

They are primitives without derivatives (their results are positions and counts, or
depend on the values only through comparisons), so they run the same way on eager
Tensors and on tape tracers, and a tape computes them again on new values. The eager
functions with PyTorch's signatures and checks are in :mod:`tracegrad.ops.sorting` and
:mod:`tracegrad.ops.histogram`.
"""
import math

from .core import KEEP, primitive

__all__ = ["bincount", "histogram_counts", "searchsorted", "unique", "unique_consecutive"]


@primitive(dtypes=KEEP)
def searchsorted(xp, boundaries, values, sorter=None, *, right=False, out_int32=False):
    """For each of ``values``, how many of its row of ``boundaries`` come before it.

    PyTorch's binary search, run on all values at once: a comparison with NaN is false,
    so the search goes right past NaN boundaries (NumPy's sorts NaN last instead).
    ``boundaries`` is 1-D or has ``values``' leading dims; ``sorter`` sorts each row."""
    m = boundaries.shape[-1]
    dtype = xp.int32 if out_int32 else xp.int64
    if m == 0:
        return xp.zeros(values.shape, dtype=dtype)
    rows = boundaries.reshape(-1, m)
    order = None if sorter is None else sorter.reshape(-1, m)
    flat = values.reshape(1, -1) if boundaries.ndim == 1 else values.reshape(rows.shape[0], -1)
    lo = xp.zeros(flat.shape, dtype=xp.int64)
    hi = xp.full(flat.shape, m, dtype=xp.int64)
    row = xp.arange(flat.shape[0]).reshape(-1, 1)
    while bool((lo < hi).any()):
        active = lo < hi
        mid = (lo + hi) >> 1
        at = xp.minimum(mid, m - 1)
        if order is not None:
            at = order[row, at]
        probe = rows[row, at]
        go_right = ~(probe > flat) if right else ~(probe >= flat)
        lo = xp.where(active & go_right, mid + 1, lo)
        hi = xp.where(active & ~go_right, mid, hi)
    return lo.reshape(values.shape).astype(dtype)


@primitive(dtypes=KEEP, nout=3)
def unique(xp, x, *, dim=None):
    """``(values, inverse, counts)``, values sorted; every NaN is its own value, as in
    PyTorch. With ``dim``, the distinct slices along ``dim`` in lexicographic order."""
    if dim is None:
        flat = x.reshape(-1)
        values, inverse, counts = xp.unique(flat, return_inverse=True, return_counts=True,
                                            equal_nan=False)
        return values, inverse.reshape(x.shape).astype(xp.int64), counts.astype(xp.int64)
    moved = xp.moveaxis(x, dim, 0)
    rows = moved.reshape(moved.shape[0], math.prod(moved.shape[1:]))
    if rows.shape[0] == 0:
        return x.copy(), xp.zeros(0, dtype=xp.int64), xp.zeros(0, dtype=xp.int64)
    order = xp.lexsort(rows.T[::-1]) if rows.shape[1] else xp.arange(rows.shape[0])
    ranked = rows[order]
    starts = xp.ones(rows.shape[0], dtype=bool)
    starts[1:] = (ranked[1:] != ranked[:-1]).any(axis=1)
    return _runs(xp, moved, ranked, order, starts, dim)


@primitive(dtypes=KEEP, nout=3)
def unique_consecutive(xp, x, *, dim=None):
    """``(values, inverse, counts)`` of the runs of equal elements (or slices along ``dim``)."""
    moved = x.reshape(-1) if dim is None else xp.moveaxis(x, dim, 0)
    rows = moved.reshape(moved.shape[0], math.prod(moved.shape[1:]))
    starts = xp.ones(rows.shape[0], dtype=bool)
    starts[1:] = (rows[1:] != rows[:-1]).any(axis=1)
    values, inverse, counts = _runs(xp, moved, rows, xp.arange(rows.shape[0]), starts, 0)
    if dim is None:
        return values.reshape(-1), inverse.reshape(x.shape), counts
    return xp.moveaxis(values, 0, dim), inverse, counts


def _runs(xp, moved, ranked, order, starts, dim):
    """Values, inverse and counts from rows already ``order``-ed so that equal ones are
    adjacent, ``starts`` marking each run's first row."""
    run = xp.cumsum(starts) - 1
    inverse = xp.empty(order.shape, dtype=xp.int64)
    inverse[order] = run
    first = xp.flatnonzero(starts)
    counts = xp.diff(xp.append(first, ranked.shape[0])).astype(xp.int64)
    values = xp.moveaxis(moved[order[first]], 0, dim)
    return values, inverse, counts


@primitive(dtypes=KEEP)
def bincount(xp, x, weights=None, *, minlength=0):
    """How often each non-negative int occurs (or the sum of its ``weights``): int64
    counts, or the weights' float dtype (float64 for integer weights)."""
    if weights is None:
        return xp.bincount(x, minlength=minlength).astype(xp.int64)
    dtype = weights.dtype if weights.dtype.kind == "f" else xp.float64
    return xp.bincount(x, weights=weights, minlength=minlength).astype(dtype)


@primitive(dtypes=KEEP)
def histogram_counts(xp, x, edges, weight=None, *, linear=False):
    """Counts (or summed ``weight``) of ``x`` in the bins between increasing ``edges``;
    the last bin holds its right edge, values outside (and NaN) are dropped. A value's
    bin is found among the edges, or with ``linear`` (``histc``'s evenly spaced bins) by
    PyTorch's arithmetic in the input's dtype, so values near an edge land where
    PyTorch puts them."""
    flat = x.reshape(-1)
    nbins = edges.shape[0] - 1
    lo, hi = edges[0], edges[-1]
    keep = (flat >= lo) & (flat <= hi)
    vals = flat[keep]
    if linear:
        pos = ((vals - lo) * x.dtype.type(nbins) / (hi - lo)).astype(xp.int64)
    else:
        pos = xp.searchsorted(edges, vals, side="right") - 1
    pos = xp.minimum(pos, nbins - 1)
    w = None if weight is None else weight.reshape(-1)[keep]
    counts = xp.bincount(pos, weights=w, minlength=nbins)[:nbins]
    return counts.astype(x.dtype)
