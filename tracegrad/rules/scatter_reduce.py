"""Reductions into positions named by an index: ``scatter_reduce`` (the message passing of
graph neural networks), ``index_reduce`` (its whole-slice form) and ``put`` (writes or sums
at flat positions).

``scatter_reduce(x, index, src, dim, reduce, include_self)`` combines every ``src`` element
into the position of ``x`` that ``index`` names along ``dim`` (as ``scatter_add`` does for
sums) with ``reduce`` in sum, prod, mean, amax, amin; positions no index names keep ``x``.
With ``include_self=False`` the scattered positions start from the reduction's identity,
so ``x``'s value there takes no part (nor any gradient).

The derivatives are PyTorch's: one partial per element of ``x`` (shape of ``x``) and one
per element of ``src`` read (shape of ``index``), written with primitives so that they
serve every path and differentiate again:

* sum: 1; mean: 1 / count, the count of values averaged (``x`` included or not);
* prod: for ``x`` the product of what was scattered onto it (no division); for ``src`` the
  result over the element, or where the element is the position's only zero, the product
  of the others (PyTorch's formula);
* amax/amin: the gradient shared evenly among every element equal to the result (ties
  split it, as ``amax`` does). PyTorch also counts an ``x`` equal to the result when
  ``include_self=False``, so that its share is lost; here ``x`` does not take part there,
  and the ``src`` ties share the whole gradient.

Forward kernels combine with ``ufunc.at`` (NumPy; CuPy where it has ``at`` for the ufunc),
so repeated indices accumulate.
"""
import math

from .arith import where
from .broadcast import broadcast_to, indicator, zeros_like, zeros_of
from .core import KEEP, primitive
from .index import ARRAY, _fit, _mesh, basic_index, gather, kept_writes, scatter, scatter_add
from .shape import reshape
from .views import writable_copy

REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")
_UFUNCS = {"prod": "multiply", "amax": "maximum", "amin": "minimum"}


def _identity(xp, reduce, dtype):
    """The value a position starts from when ``x`` takes no part (include_self=False)."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.kind == "b":
        return reduce == "amin"
    if dtype.kind in "iu":
        info = xp.iinfo(dtype)
        return info.min if reduce == "amax" else info.max
    return -xp.inf if reduce == "amax" else xp.inf


def _combiner(xp, reduce):
    """``f(dst, where_, values)``: ``dst[where_] (op)= values`` with repeated positions
    combined, for ``reduce``'s op (asked for before anything is written, so that a device
    without it leaves ``dst`` as it was)."""
    if reduce in ("sum", "mean"):
        return xp.scatter_add
    at = getattr(getattr(xp, _UFUNCS[reduce]), "at", None)
    if at is None:
        raise NotImplementedError(f"scatter_reduce(reduce={reduce!r}) needs {_UFUNCS[reduce]}.at, which this "
                                  f"device's array library ({getattr(xp, 'name', xp)}) does not have")
    return at


def reduce_into(xp, dst, index, src, dim, reduce, include_self):
    """The kernel: ``src`` (its leading ``index.shape`` block) reduced into ``dst`` in place.
    ``src`` is read as it was before the write, also where it is ``dst`` itself
    (``x.scatter_reduce_(0, i, x, ...)``: the values are copied first)."""
    combine = _combiner(xp, reduce)
    where_ = _mesh(xp, index, dim)
    values = src[tuple(slice(0, n) for n in index.shape)]
    if xp.may_share_memory(values, dst):
        values = values.copy()
    if not include_self:
        dst[where_] = _identity(xp, reduce, dst.dtype)
    combine(dst, where_, values)
    if reduce == "mean":
        count = xp.full(dst.shape, 1 if include_self else 0, dtype=dst.dtype)
        xp.scatter_add(count, where_, xp.ones(values.shape, dtype=dst.dtype))
        count = xp.where(count == 0, xp.ones((), dtype=dst.dtype), count)
        dst[...] = dst // count if dst.dtype.kind in "iu" else dst / count


@primitive("ScatterReduceBackward0", dtypes=KEEP)
def scatter_reduce(xp, x, index, src, *, dim, reduce, include_self=True):
    """A copy of ``x`` with ``src`` reduced into the positions ``index`` names along ``dim``."""
    out = writable_copy(xp, x)
    reduce_into(xp, out, index, src, dim, reduce, include_self)
    return out


@scatter_reduce.inplace
def scatter_reduce_into(xp, dst, index, src, *, dim, reduce, include_self=True):
    reduce_into(xp, dst, index, src, dim, reduce, include_self)


# -- the partial derivatives ---------------------------------------------------------------------

def _cut(src, index):
    """The block of ``src`` that scatter reads: its leading ``index.shape`` elements."""
    if tuple(src.shape) == tuple(index.shape):
        return src
    return basic_index(src, index=tuple(slice(0, n) for n in index.shape))


def _ones(like, shape):
    return zeros_of(like, shape=tuple(shape)) + 1.0


def _untouched(like, x, index, dim):
    """1 where no index points, 0 where one does (in ``like``'s dtype, ``x``'s shape)."""
    return scatter(_ones(like, x.shape), index, 0, dim=dim)


def _in_dtype_of(like, n):
    """Counts made in ``index``'s integer dtype (exact at any size: a float16 count stops
    at 2048), in ``like``'s dtype."""
    return indicator(n, like)


def _count(like, x, index, dim, include_self):
    """How many values each position averages (1 where none: it keeps ``x``)."""
    start = _ones(index, x.shape) if include_self else zeros_of(index, shape=tuple(x.shape))
    n = scatter_add(start, index, _ones(index, index.shape), dim=dim)
    return _in_dtype_of(like, where(n == 0, 1, n))


def _extremum_shares(like, out, x, index, src, dim, include_self):
    """(x's hits, src's hits, hits per position): the elements equal to the result, which
    share its gradient evenly. Where the result is NaN nothing equals it and the count is
    0: every element that took part gets 0 / 0 = NaN, as from PyTorch's (and the table's)
    ``amax``."""
    x_hits = indicator(x == out, index)
    if not include_self:
        x_hits = x_hits * _untouched(index, x, index, dim)
    src_hits = indicator(_cut(src, index) == gather(out, index, dim=dim), index)
    n = scatter_add(x_hits, index, src_hits, dim=dim)
    return indicator(x_hits, like), indicator(src_hits, like), _in_dtype_of(like, n)


def self_partials(like, out, x, index, src, dim, reduce, include_self):
    """d out / d x, elementwise (``x``'s shape); ``like`` gives the dtype."""
    if reduce == "amax" or reduce == "amin":
        x_hits, _, n = _extremum_shares(like, out, x, index, src, dim, include_self)
        if include_self:
            return x_hits / n
        # (x took no part where an index points: 0 there, not the NaN of a NaN result)
        return where(_untouched(like, x, index, dim) == 1, x_hits / n, 0.0)
    if not include_self:
        return _untouched(like, x, index, dim)
    if reduce == "sum":
        return _ones(like, x.shape)
    if reduce == "mean":
        return 1.0 / _count(like, x, index, dim, include_self)
    # prod: the product of what was scattered onto each position
    return scatter_reduce(_ones(like, x.shape), index, _cut(src, index), dim=dim, reduce="prod")


def src_partials(like, out, x, index, src, dim, reduce, include_self):
    """d out[index] / d src, for the elements of ``src`` read (``index``'s shape)."""
    if reduce == "sum":
        return _ones(like, index.shape)
    if reduce == "mean":
        return gather(1.0 / _count(like, x, index, dim, include_self), index, dim=dim)
    if reduce == "amax" or reduce == "amin":
        _, src_hits, n = _extremum_shares(like, out, x, index, src, dim, include_self)
        return src_hits / gather(n, index, dim=dim)
    # prod: out / src, or for a position's only zero the product of the others (PyTorch's)
    cut = _cut(src, index)
    zero = cut == 0
    zeros_there = gather(scatter_add(zeros_of(like, shape=tuple(x.shape)), index, indicator(zero, like), dim=dim),
                         index, dim=dim)
    single = zero & (zeros_there == 1)
    others = scatter_reduce(x, index, where(single, 1.0, cut), dim=dim, reduce="prod", include_self=include_self)
    return where(single, gather(others, index, dim=dim), gather(out, index, dim=dim) / where(zero, 1.0, cut))


@scatter_reduce.vjp("x", uses="x index src out")
def scatter_reduce_vjp_x(g, out, x, index, src, *, dim, reduce, include_self=True):
    return g * self_partials(g, out, x, index, src, dim, reduce, include_self)


@scatter_reduce.vjp("src", uses="x index src out")
def scatter_reduce_vjp_src(g, out, x, index, src, *, dim, reduce, include_self=True):
    return _fit(gather(g, index, dim=dim) * src_partials(g, out, x, index, src, dim, reduce, include_self), src)


@scatter_reduce.jvp("x")
def scatter_reduce_jvp_x(t, out, x, index, src, *, dim, reduce, include_self=True):
    return t * self_partials(t, out, x, index, src, dim, reduce, include_self)


@scatter_reduce.jvp("src")
def scatter_reduce_jvp_src(t, out, x, index, src, *, dim, reduce, include_self=True):
    weighted = _cut(t, index) * src_partials(t, out, x, index, src, dim, reduce, include_self)
    return scatter_add(zeros_like(out), index, weighted, dim=dim)


# -- index_reduce: whole slices of src reduced into the slices of x that a 1-D index names --------

def spread_index(index, src, dim):
    """The 1-D ``index`` as scatter's index: the slice number along ``dim`` for every
    element of ``src``."""
    shape = [1] * src.ndim
    shape[dim] = -1
    return broadcast_to(reshape(index, shape=tuple(shape)), shape=tuple(src.shape))


@primitive("IndexReduceBackward0", dtypes=KEEP)
def index_reduce(xp, x, index, src, *, dim, reduce, include_self=True):
    """A copy of ``x`` with slice ``k`` of ``src`` along ``dim`` reduced into slice
    ``index[k]`` of ``x`` (``reduce``: prod, mean, amax or amin)."""
    out = writable_copy(xp, x)
    reduce_into(xp, out, spread_index(index, src, dim), src, dim, reduce, include_self)
    return out


@index_reduce.vjp("x", uses="x index src out")
def index_reduce_vjp_x(g, out, x, index, src, *, dim, reduce, include_self=True):
    return scatter_reduce_vjp_x(g, out, x, spread_index(index, src, dim), src, dim=dim, reduce=reduce,
                                include_self=include_self)


@index_reduce.vjp("src", uses="x index src out")
def index_reduce_vjp_src(g, out, x, index, src, *, dim, reduce, include_self=True):
    return scatter_reduce_vjp_src(g, out, x, spread_index(index, src, dim), src, dim=dim, reduce=reduce,
                                  include_self=include_self)


@index_reduce.jvp("x")
def index_reduce_jvp_x(t, out, x, index, src, *, dim, reduce, include_self=True):
    return scatter_reduce_jvp_x(t, out, x, spread_index(index, src, dim), src, dim=dim, reduce=reduce,
                                include_self=include_self)


@index_reduce.jvp("src")
def index_reduce_jvp_src(t, out, x, index, src, *, dim, reduce, include_self=True):
    return scatter_reduce_jvp_src(t, out, x, spread_index(index, src, dim), src, dim=dim, reduce=reduce,
                                  include_self=include_self)


# -- put: writes (or sums) at positions of the flattened tensor ----------------------------------

@primitive("PutBackward0", dtypes=KEEP, linear=True)
def put(xp, x, index, source, *, accumulate=False):
    """A copy of ``x`` with ``source`` written (summed, if ``accumulate``) at the flat,
    row-major positions ``index`` (non-negative; a repeated position keeps the last value
    written unless summed)."""
    out = x.copy()  # (C order: its flat view is the row-major order of x)
    flat = out.reshape(-1)
    where_ = index.reshape(-1)
    values = xp.broadcast_to(xp.asarray(source, dtype=out.dtype).reshape(-1), where_.shape)
    if accumulate:
        xp.scatter_add(flat, (where_,), values)
    else:
        flat[where_] = values
    return out


@put.vjp("x", uses="index")
def put_vjp_x(g, out, x, index, source, *, accumulate=False):
    return g if accumulate else put(g, index, 0.0)


@put.vjp("source", uses="index")
def put_vjp_source(g, out, x, index, source, *, accumulate=False):
    """Each source element gets the gradient at its position (PyTorch's ``grad.take``),
    except one overwritten by a later write to the same position, which is not in the
    result (PyTorch gives it that gradient too; it calls repeats undefined without
    ``accumulate``), as for ``index_put``."""
    flat = reshape(index, shape=(-1,))
    picked = gather(reshape(g, shape=(-1,)), flat, dim=0)
    if not accumulate:
        picked = where(kept_writes(flat, index=(ARRAY,), shape=(math.prod(tuple(x.shape)),)), picked, 0.0)
    return reshape(picked, shape=tuple(source.shape)) if hasattr(source, "shape") else picked.sum()


__all__ = ["REDUCTIONS", "index_reduce", "put", "reduce_into", "scatter_reduce", "spread_index"]
