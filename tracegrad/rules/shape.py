"""Shape rules: reshaping views, axis permutations, flips and rolls, repetition, triangles,
joining (cat, stack) and splitting (split, unbind). All are linear, so their jvps are the
rule applied to the tangent; each vjp undoes the rearrangement."""
from ..backend import cpu as _cpu
from .broadcast import sum_to, zeros_of
from .core import KEEP, primitive
from .views import writable_copy


# -- views that only reinterpret the shape ------------------------------------------------------
# (A NumPy array's own methods, where the operand is one: ``np.reshape`` and friends add two
# Python frames to a view that takes a few hundred nanoseconds.)

_NDARRAY = _cpu.ndarray


@primitive("ViewBackward0", dtypes=KEEP, view=True, linear=True, complex=True)
def reshape(xp, x, *, shape):
    return x.reshape(shape) if type(x) is _NDARRAY else xp.reshape(x, tuple(shape))


def _squeeze_name(args, params):
    dim = params.get("dim")
    return "SqueezeBackward0" if dim is None else (
        "SqueezeBackward2" if isinstance(dim, tuple) else "SqueezeBackward1")


@primitive(_squeeze_name, dtypes=KEEP, view=True, linear=True, complex=True)
def squeeze(xp, x, *, dim=None):
    """Drop size-1 dims: all of them (``dim=None``), or those among ``dim`` (int or tuple)."""
    dims = (dim,) if isinstance(dim, int) else dim
    shape = tuple(s for i, s in enumerate(x.shape) if s != 1 or (dims is not None and i not in dims))
    return xp.reshape(x, shape)


@primitive("UnsqueezeBackward0", dtypes=KEEP, view=True, linear=True, complex=True)
def unsqueeze(xp, x, *, dim):
    """A new size-1 axis at ``dim``, with PyTorch's stride for it (size * stride of the dim
    it is inserted before, or 1 at the end)."""
    strides = list(x.strides)
    strides.insert(dim, x.shape[dim] * x.strides[dim] if dim < x.ndim else x.itemsize)
    return xp.as_strided(x, x.shape[:dim] + (1,) + x.shape[dim:], tuple(strides))


def reshape_back(g, out, x, **params):
    """The vjp of every shape-only view: the gradient reshaped to the input's shape."""
    return reshape(g, shape=x.shape)


@primitive("UnsafeViewBackward0", dtypes=KEEP, linear=True, complex=True)
def unsafe_view(xp, x, *, shape):
    """``reshape`` of a fresh copy (what ``reshape`` does when no view can alias ``x``):
    not a view of anything the user holds."""
    return xp.reshape(x, tuple(shape))


for _p in (reshape, squeeze, unsqueeze, unsafe_view):
    _p.vjp("x")(reshape_back)


# -- permutations ---------------------------------------------------------------------------------

@primitive("TransposeBackward0", dtypes=KEEP, view=True, linear=True, complex=True)
def transpose(xp, x, *, dim0, dim1):
    return x.swapaxes(dim0, dim1) if type(x) is _NDARRAY else xp.swapaxes(x, dim0, dim1)


@transpose.vjp("x")
def transpose_vjp(g, out, x, *, dim0, dim1):
    return transpose(g, dim0=dim0, dim1=dim1)


@primitive("TBackward0", dtypes=KEEP, view=True, linear=True, complex=True)
def t(xp, x):
    return x.T


@t.vjp("x")
def t_vjp(g, out, x):
    return t(g)


@primitive("PermuteBackward0", dtypes=KEEP, view=True, linear=True, complex=True)
def permute(xp, x, *, dims):
    return x.transpose(dims) if type(x) is _NDARRAY else xp.transpose(x, tuple(dims))


@permute.vjp("x")
def permute_vjp(g, out, x, *, dims):
    inverse = [0] * len(dims)
    for i, d in enumerate(dims):
        inverse[d] = i
    return permute(g, dims=tuple(inverse))


@primitive("FlipBackward0", dtypes=KEEP, linear=True, complex=True)
def flip(xp, x, *, dims):
    return xp.flip(x, tuple(dims)).copy()  # a copy: PyTorch never has negative strides


@flip.vjp("x")
def flip_vjp(g, out, x, *, dims):
    return flip(g, dims=dims)


@primitive("RollBackward0", dtypes=KEEP, linear=True, complex=True)
def roll(xp, x, *, shifts, dims):
    return xp.roll(x, shifts, dims)


@roll.vjp("x")
def roll_vjp(g, out, x, *, shifts, dims):
    back = tuple(-s for s in shifts) if isinstance(shifts, tuple) else -shifts
    return roll(g, shifts=back, dims=dims)


@primitive("RepeatBackward0", dtypes=KEEP, linear=True, complex=True)
def repeat(xp, x, *, repeats):
    return xp.tile(x, tuple(repeats))


@repeat.vjp("x")
def repeat_vjp(g, out, x, *, repeats):
    # View g as (r0, s0, r1, s1, ...) and sum away the repetition axes.
    sizes = (1,) * (len(repeats) - x.ndim) + tuple(x.shape)
    split = tuple(v for r, s in zip(repeats, sizes) for v in (r, s))
    kept = tuple(v for s in sizes for v in (1, s))
    return reshape(sum_to(reshape(g, shape=split), shape=kept), shape=x.shape)


@primitive("TrilBackward0", dtypes=KEEP, linear=True, complex=True)
def tril(xp, x, *, diagonal=0):
    return xp.tril(x, diagonal)


@tril.vjp("x")
def tril_vjp(g, out, x, *, diagonal=0):
    return tril(g, diagonal=diagonal)


@primitive("TriuBackward0", dtypes=KEEP, linear=True, complex=True)
def triu(xp, x, *, diagonal=0):
    return xp.triu(x, diagonal)


@triu.vjp("x")
def triu_vjp(g, out, x, *, diagonal=0):
    return triu(g, diagonal=diagonal)


# -- joining and splitting ------------------------------------------------------------------------

@primitive("CatBackward0", linear=True, complex=True)
def cat(xp, *xs, dim):
    return xp.concatenate(xs, axis=dim)


@cat.vjp_all()
def cat_vjp(g, out, *xs, dim):
    return split(g, sizes=tuple(x.shape[dim] for x in xs), dim=dim)


@primitive("StackBackward0", linear=True, complex=True)
def stack(xp, *xs, dim):
    return xp.stack(xs, axis=dim)


@stack.vjp_all()
def stack_vjp(g, out, *xs, dim):
    return unbind(g, dim=dim)


def _split_name(args, params):
    return "SplitBackward0" if params.get("chunked") else "SplitWithSizesBackward0"


def _split_saved(params):
    if params.get("chunked"):
        return {"split_size": params["sizes"][0]}
    return {"split_sizes": list(params["sizes"])}


@primitive(_split_name, dtypes=KEEP, view=True, nout=None, linear=True, saved_view=_split_saved, complex=True)
def split(xp, x, *, sizes, dim, chunked=False):
    """Views of consecutive pieces of ``x`` along ``dim`` with the given ``sizes`` (basic
    slices: what ``xp.split`` makes, without its Python layers)."""
    lead = (slice(None),) * (dim if dim >= 0 else dim + x.ndim)  # (cat's vjp passes dim=-1)
    pieces, start = [], 0
    for s in sizes:
        pieces.append(x[lead + (slice(start, start + s),)])
        start += s
    return tuple(pieces)


@split.vjp("x")
def split_vjp(g, out, x, *, sizes, dim, chunked=False):
    return cat(*g, dim=dim)


@primitive("UnbindBackward0", dtypes=KEEP, view=True, nout=None, linear=True, complex=True)
def unbind(xp, x, *, dim):
    lead = (slice(None),) * (dim if dim >= 0 else dim + x.ndim)
    return tuple(x[lead + (i, Ellipsis)] for i in range(x.shape[dim]))


@unbind.vjp("x")
def unbind_vjp(g, out, x, *, dim):
    return stack(*g, dim=dim)


# -- as_strided -----------------------------------------------------------------------------------

def _strided_positions(xp, size, stride, offset):
    """The row-major position of every element ``as_strided`` reads, shaped ``size``."""
    pos = xp.full(tuple(size), offset, dtype=xp.int64)
    for k, (n, st) in enumerate(zip(size, stride)):
        pos += (xp.arange(n, dtype=xp.int64) * st).reshape((n,) + (1,) * (len(size) - k - 1))
    return pos


def _check_strided(n, itemsize, size, stride, offset):
    """PyTorch's refusals: negative strides, positions outside the ``n`` elements read."""
    if any(st < 0 for st in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: "
                           f"{list(stride)}")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    last = offset + sum((m - 1) * st for m, st in zip(size, stride))
    if all(m > 0 for m in size) and last >= n:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
                           f"itemsize {itemsize} requiring a storage size of {(last + 1) * itemsize} are out of "
                           f"bounds for storage of size {n * itemsize}")


@primitive("AsStridedBackward0", dtypes=KEEP, view=True, linear=True)
def as_strided(xp, x, *, size, stride, offset=0):
    """PyTorch's ``as_strided`` over the row-major elements of ``x`` (a view when ``x`` is
    contiguous, as the eager ``as_strided`` requires): element ``i`` of the result is
    ``x.flat[offset + sum_k i_k stride_k]``. Positions may repeat (overlapping windows),
    so the gradient accumulates (:func:`strided_add`)."""
    flat = xp.ascontiguousarray(x).reshape(-1)
    _check_strided(flat.size, flat.itemsize, size, stride, offset)
    return xp.as_strided(flat[offset:], tuple(size), tuple(st * flat.itemsize for st in stride))


@as_strided.vjp("x")
def as_strided_vjp(g, out, x, *, size, stride, offset=0):
    return strided_add(zeros_of(g, shape=x.shape), g, size=size, stride=stride, offset=offset)


@primitive("AsStridedScatterBackward0", dtypes=KEEP, linear=True)
def strided_add(xp, x, src, *, size, stride, offset=0):
    """``x`` with ``src`` added at the positions ``as_strided(x, ...)`` reads, a repeated
    position summing every value sent to it: as_strided's transpose."""
    out = xp.ascontiguousarray(x).copy()
    flat = out.reshape(-1)
    _check_strided(flat.size, flat.itemsize, size, stride, offset)
    xp.scatter_add(flat, (_strided_positions(xp, size, stride, offset).reshape(-1),),
                   xp.broadcast_to(src, tuple(size)).reshape(-1))
    return out


@strided_add.vjp("x")
def strided_add_vjp_x(g, out, x, src, *, size, stride, offset=0):
    return g


@strided_add.vjp("src")
def strided_add_vjp_src(g, out, x, src, *, size, stride, offset=0):
    return sum_to(as_strided(g, size=size, stride=stride, offset=offset), shape=src.shape)


# -- diagonals ------------------------------------------------------------------------------------

@primitive("DiagonalBackward0", dtypes=KEEP, view=True, linear=True, complex=True)
def diagonal(xp, x, *, offset=0, dim1=0, dim2=1):
    """A writable view of a diagonal (NumPy's own ``diagonal`` view is read-only)."""
    d = xp.diagonal(x, offset, dim1, dim2)
    start = [slice(None)] * x.ndim
    if offset >= 0:
        start[dim2] = slice(offset, None)
    else:
        start[dim1] = slice(-offset, None)
    return xp.as_strided(x[tuple(start)], d.shape, d.strides)


@diagonal.vjp("x")
def diagonal_vjp(g, out, x, *, offset=0, dim1=0, dim2=1):
    return diagonal_scatter(zeros_of(g, shape=x.shape), g, offset=offset, dim1=dim1, dim2=dim2)


@primitive("DiagonalScatterBackward0", dtypes=KEEP, linear=True, complex=True)
def diagonal_scatter(xp, x, src, *, offset=0, dim1=0, dim2=1):
    """``x`` with the chosen diagonal replaced by ``src``."""
    out = writable_copy(xp, x)
    diagonal.impl(xp, out, offset=offset, dim1=dim1, dim2=dim2)[...] = src
    return out


@diagonal_scatter.vjp("x")
def diagonal_scatter_vjp_x(g, out, x, src, *, offset=0, dim1=0, dim2=1):
    return diagonal_scatter(g, 0.0, offset=offset, dim1=dim1, dim2=dim2)


@diagonal_scatter.vjp("src")
def diagonal_scatter_vjp_src(g, out, x, src, *, offset=0, dim1=0, dim2=1):
    return diagonal(g, offset=offset, dim1=dim1, dim2=dim2)
