"""Indexing rules. An index is split by :mod:`tracegrad.ops.indexing` into a static
structure (slices, ints, None, Ellipsis, and :data:`ARRAY` placeholders) and the index
arrays, which are passed as operands. Basic indexing is a view; advanced indexing copies,
and its vjp scatter-adds, so repeated indices accumulate their gradients."""
from .broadcast import expand_to, unbroadcast, zeros_like, zeros_of
from .core import KEEP, primitive
from .views import copy_slices, writable_copy


def indices_below(idx, n):
    """Whether every index of the integer array ``idx`` (not empty) lies in [0, n): one
    maximum over the indices read as unsigned, where a negative one is huge."""
    if idx.dtype.kind == "i":
        idx = idx.view(f"u{idx.dtype.itemsize}")
    return bool(idx.max() < n)  # (a test, not a number: on the meta device, no values to check)


class _ArrayPlaceholder:
    """Marks where an index array sits in an index structure."""

    __slots__ = ()

    def __repr__(self):
        return "ARRAY"

    def __reduce__(self):
        return "ARRAY"


ARRAY = _ArrayPlaceholder()


def fill_index(index, arrays):
    """The backend index: ``index`` with its placeholders replaced by ``arrays``, in order."""
    it = iter(arrays)
    return tuple(next(it) if part is ARRAY else part for part in index)


def _basic_name(args, params):
    for part in reversed(params["index"]):
        if isinstance(part, int):
            return "SelectBackward0"
        if part is None:
            return "UnsqueezeBackward0"
        if isinstance(part, slice) and part != slice(None):
            return "SliceBackward0"
    index = params["index"]
    # x[:] is recorded as a slice, x[...] (an empty index) as an alias, as in PyTorch
    return "SliceBackward0" if index and all(isinstance(p, slice) for p in index) else "AliasBackward0"


_INT64_MAX = 9223372036854775807  # PyTorch's saved end of a slice without a stop


def _basic_saved(params):
    """PyTorch's saved attributes of a one-dimension index (``SelectBackward0``: dim and
    index; ``SliceBackward0``: dim, start, end, step; ``UnsqueezeBackward0``: dim)."""
    index = params["index"]
    if Ellipsis in index:
        return {}
    moved = [(d, part) for d, part in enumerate(index) if part != slice(None)]
    if not moved and index and all(isinstance(p, slice) for p in index):
        moved = [(len(index) - 1, index[-1])]  # a whole-dimension slice
    if len(moved) != 1:
        return {}
    d, part = moved[0]
    if isinstance(part, slice):
        return {"dim": d, "start": part.start or 0,
                "end": _INT64_MAX if part.stop is None else part.stop, "step": part.step or 1}
    return {"dim": d, "index": part} if isinstance(part, int) else {"dim": d}


@primitive(_basic_name, dtypes=KEEP, view=True, linear=True, saved_view=_basic_saved, complex=True)
def basic_index(xp, x, *, index):
    """``x[index]`` with only ints, slices, None and Ellipsis: a view. (A trailing ``...``
    makes NumPy return a 0-d view, not a copied scalar, when every dim is indexed.)"""
    out = x[index if any(part is Ellipsis for part in index) else index + (Ellipsis,)]
    if any(part is None for part in index):
        out = xp.as_strided(out, out.shape, _torch_strides(x, index))
    return out


def _torch_strides(x, index):
    """The strides PyTorch gives ``x[index]``: as NumPy's, except that a new (``None``)
    axis inserted before dim d gets stride size[d] * stride[d] (NumPy uses 0). Only
    size-1 axes differ, so the memory addressed is the same."""
    shape, strides = list(x.shape), list(x.strides)
    consumed = sum(1 for part in index if part is not None and part is not Ellipsis)
    d = 0
    for part in index:
        if part is None:
            strides.insert(d, shape[d] * strides[d] if d < len(shape) else x.itemsize)
            shape.insert(d, 1)
            d += 1
        elif part is Ellipsis:
            d += x.ndim - consumed
        elif isinstance(part, int):
            del shape[d], strides[d]
        else:
            start, stop, step = part.indices(shape[d])
            shape[d] = len(range(start, stop, step))
            strides[d] *= step
            d += 1
    return tuple(strides)


@basic_index.vjp("x")
def basic_index_vjp(g, out, x, *, index):
    return copy_slices(zeros_of(g, shape=x.shape), g, chain=((basic_index, {"index": index}, 0),))


@primitive("IndexBackward0", dtypes=KEEP, linear=True, complex=True)
def advanced_index(xp, x, *indices, index):
    """``x[index]`` with index arrays (integers or boolean masks): a copy."""
    return x[fill_index(index, indices)]


@advanced_index.vjp("x", uses="indices")
def advanced_index_vjp(g, out, x, *indices, index):
    return index_put(zeros_of(g, shape=x.shape), g, *indices, index=index, accumulate=True)


@primitive("IndexPutBackward0", dtypes=KEEP, complex=True)
def index_put(xp, x, values, *indices, index, accumulate=False):
    """A copy of ``x`` with ``x[index] = values`` (``+=``, summing repeats, if ``accumulate``)."""
    out = xp.asarray(x).copy()  # (a 0-d value may come as a NumPy scalar, which is immutable)
    index_put_into(xp, out, values, *indices, index=index, accumulate=accumulate)
    return out


@index_put.inplace
def index_put_into(xp, dst, values, *indices, index, accumulate=False):
    where = fill_index(index, indices)
    if accumulate:
        xp.scatter_add(dst, where, xp.broadcast_to(values, _picked_shape(dst, where)))
    elif indices and getattr(xp, "name", "cpu") != "cpu":
        _write_last_wins(xp, dst, where, values)
    else:
        dst[where] = values  # (NumPy assigns in order: the last of repeated positions stays)


def _picked_shape(dst, where):
    """The shape of ``dst[where]``, without gathering it when ``where`` is one integer
    array picking along dim 0 (an embedding's backward)."""
    if len(where) == 1 and getattr(where[0], "dtype", None) is not None and where[0].dtype.kind in "iu":
        return tuple(where[0].shape) + tuple(dst.shape[1:])
    return dst[where].shape


def _write_last_wins(xp, dst, where, values):
    """``dst[where] = values`` where repeated positions keep the last value, as NumPy's
    assignment does (a device's parallel assignment leaves the winner open): only the
    kept values are written, each to its own position."""
    n = 1
    for s in dst.shape:
        n *= s
    targets = xp.arange(n, dtype=xp.int64).reshape(dst.shape)[where]
    kept = _kept(xp, where, dst.shape)
    vals = xp.broadcast_to(xp.asarray(values, dtype=dst.dtype), targets.shape)
    flat = xp.ascontiguousarray(dst)
    flat.reshape(-1)[targets[kept]] = vals[kept]
    if flat is not dst:
        dst[...] = flat


@index_put.vjp("x", uses="indices")
def index_put_vjp_x(g, out, x, values, *indices, index, accumulate=False):
    return g if accumulate else index_put(g, 0.0, *indices, index=index)


@index_put.vjp("values", uses="indices")
def index_put_vjp_values(g, out, x, values, *indices, index, accumulate=False):
    picked = advanced_index(g, *indices, index=index)
    if not accumulate and indices:  # a value overwritten at a repeated index gets nothing
        picked = where_(kept_writes(*indices, index=index, shape=tuple(x.shape)), picked, 0.0)
    return unbroadcast(picked, values)


@primitive(dtypes=KEEP)
def kept_writes(xp, *indices, index, shape):
    """Which values ``x[index] = values`` keeps, for ``x`` of ``shape``: NumPy assigns in
    order, so at a repeated index only the last value remains (False for the others)."""
    return _kept(xp, fill_index(index, indices), shape)


def _kept(xp, where, shape):
    """The last value written to each position by ``x[where] = ...`` (x of ``shape``): each
    value's flat target, gathered (no write order involved, which CuPy leaves open), ranked
    by a stable sort; the last of each run of one target is kept."""
    n = 1
    for s in shape:
        n *= s
    targets = xp.arange(n, dtype=xp.int64).reshape(shape)[where]
    flat = targets.reshape(-1)
    order = xp.argsort(flat, kind="stable")
    ranked = flat[order]
    last = xp.ones(flat.shape, dtype=bool)
    last[:-1] = ranked[1:] != ranked[:-1]
    kept = xp.empty(flat.shape, dtype=bool)
    kept[order] = last  # (a permutation: every position written once)
    return kept.reshape(targets.shape)


@index_put.jvp("x")
def index_put_jvp_x(t, out, x, values, *indices, index, accumulate=False):
    return t if accumulate else index_put(t, 0.0, *indices, index=index)


@index_put.jvp("values")
def index_put_jvp_values(t, out, x, values, *indices, index, accumulate=False):
    return index_put(zeros_like(out), t, *indices, index=index, accumulate=accumulate)


def _along(dim, ndim):
    """An index structure picking one index array along ``dim``."""
    return (slice(None),) * dim + (ARRAY,) + (slice(None),) * (ndim - dim - 1)


@primitive("IndexSelectBackward0", dtypes=KEEP, linear=True, complex=True)
def index_select(xp, x, index, *, dim):
    return xp.take(x, index, axis=dim)


@index_select.vjp("x", uses="index")
def index_select_vjp(g, out, x, index, *, dim):
    return index_put(zeros_of(g, shape=x.shape), g, index, index=_along(dim, x.ndim), accumulate=True)


def _mesh(xp, index, dim):
    """Full coordinates for ``index`` used along ``dim`` (as gather/scatter read it)."""
    coords = []
    for d in range(index.ndim):
        if d == dim:
            coords.append(index)
        else:
            shape = [1] * index.ndim
            shape[d] = index.shape[d]
            coords.append(xp.arange(index.shape[d]).reshape(shape))
    return tuple(coords)


@primitive("GatherBackward0", dtypes=KEEP, linear=True, saved_names=("self", "index"),
           saved_view=lambda params: {"sparse_grad": False}, complex=True)
def gather(xp, x, index, *, dim):
    """``out[i][j][k] = x[i][index[i][j][k]][k]`` (for dim=1); index may be smaller than x."""
    return x[_mesh(xp, index, dim)]


@gather.vjp("x", uses="index x")  # x for its shape; PyTorch keeps x itself, and so do we
def gather_vjp(g, out, x, index, *, dim):
    return scatter_add(zeros_of(g, shape=x.shape), index, g, dim=dim)


@primitive("ScatterAddBackward0", dtypes=KEEP, linear=True, complex=True)
def scatter_add(xp, x, index, src, *, dim):
    """A copy of ``x`` with ``src`` added at ``index`` along ``dim`` (repeats summed)."""
    out = writable_copy(xp, x)
    scatter_add_into(xp, out, index, src, dim=dim)
    return out


@scatter_add.inplace
def scatter_add_into(xp, dst, index, src, *, dim):
    xp.scatter_add(dst, _mesh(xp, index, dim), src[tuple(slice(0, n) for n in index.shape)])


@scatter_add.vjp("x")
def scatter_add_vjp_x(g, out, x, index, src, *, dim):
    return g


@scatter_add.vjp("src", uses="index")
def scatter_add_vjp_src(g, out, x, index, src, *, dim):
    return _fit(gather(g, index, dim=dim), src)


def _fit(v, like):
    """``v`` (shaped like an index) padded with zeros to the shape of ``like`` (a src);
    summed, if ``like`` is a number that was written everywhere."""
    if not hasattr(like, "shape"):
        return unbroadcast(v, like)
    if tuple(v.shape) == tuple(like.shape):
        return v
    region = tuple(slice(0, n) for n in v.shape)
    return copy_slices(zeros_of(v, shape=like.shape), v, chain=((basic_index, {"index": region}, 0),))


@primitive("ScatterBackward0", dtypes=KEEP, complex=True)
def scatter(xp, x, index, src, *, dim):
    """A copy of ``x`` with ``src`` (a tensor or a number) written at ``index`` along ``dim``."""
    out = writable_copy(xp, x)
    scatter_into(xp, out, index, src, dim=dim)
    return out


@scatter.inplace
def scatter_into(xp, dst, index, src, *, dim):
    if getattr(src, "ndim", 0):
        src = src[tuple(slice(0, n) for n in index.shape)]
    dst[_mesh(xp, index, dim)] = src


@scatter.vjp("x", uses="index")
def scatter_vjp_x(g, out, x, index, src, *, dim):
    return scatter(g, index, 0.0, dim=dim)


@scatter.vjp("src", uses="index")
def scatter_vjp_src(g, out, x, index, src, *, dim):
    return _fit(gather(g, index, dim=dim), src)


@scatter.jvp("x")
def scatter_jvp_x(t, out, x, index, src, *, dim):
    return scatter(t, index, 0.0, dim=dim)


@scatter.jvp("src")
def scatter_jvp_src(t, out, x, index, src, *, dim):
    return scatter(zeros_like(out), index, t, dim=dim)


@primitive("MaskedFillBackward0", dtypes=KEEP, number_edges=False, complex=True)
def masked_fill(xp, x, mask, value):
    return xp.where(mask, xp.asarray(value, dtype=x.dtype), x)


@masked_fill.inplace
def masked_fill_into(xp, dst, mask, value):
    dst[xp.broadcast_to(mask, dst.shape)] = value


@masked_fill.vjp("x", uses="mask")
def masked_fill_vjp_x(g, out, x, mask, value):
    return unbroadcast(where_(mask, 0.0, g), x)


@masked_fill.vjp("value", uses="mask")
def masked_fill_vjp_value(g, out, x, mask, value):
    return unbroadcast(where_(mask, g, 0.0), value)


@masked_fill.jvp("x")
def masked_fill_jvp_x(t, out, x, mask, value):
    return expand_to(where_(mask, 0.0, t), out)


@masked_fill.jvp("value")
def masked_fill_jvp_value(t, out, x, mask, value):
    return expand_to(where_(mask, t, 0.0), out)


@primitive(dtypes=KEEP)
def nonzero(xp, x):
    """Indices of the non-zero elements, one row per element (PyTorch's layout)."""
    return xp.stack(xp.nonzero(x), axis=-1) if x.ndim else xp.zeros((int(bool(x)), 0), dtype="int64")


from .arith import where as where_  # noqa: E402  (arith imports nothing from here)
