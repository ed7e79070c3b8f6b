"""PyTorch's array-building and rearranging functions: kron, cross, diff, rot90, diag,
diag_embed, diagflat, trace, tile, repeat_interleave, block_diag, take, the
``atleast_*d`` family, the stacks (hstack, vstack, dstack, column_stack), the splits
(tensor_split, hsplit, vsplit, dsplit). Sorting is in :mod:`tracegrad.ops.sorting`.

The compositions themselves live in :mod:`tracegrad.rules.arrays`, shared with the NumPy
map; here are PyTorch's signatures, defaults and error messages."""
import warnings

from ..backend import cpu as host  # positions worked out on the host
from ..backend import dtypes as _dt
from ..rules import arrays as A
from ..rules import index as I
from ..rules import reduce as R
from ..rules import shape as S
from ._args import every_sample, shape_args, wrap_dim
from .shape import cat, reshape, unsqueeze

__all__ = ["FUNCTIONS", "METHODS"]


def _tensors(tensors):
    """``f(a, b)`` and ``f([a, b])`` alike (PyTorch's ``atleast_*d`` take both)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return list(tensors[0])
    return list(tensors)


def _atleast(n):
    def grow(t):
        if n == 3 and t.ndim == 1:
            return unsqueeze(unsqueeze(t, 0), 2)
        if n == 3 and t.ndim == 2:
            return unsqueeze(t, 2)
        return A.unsqueeze_to(t, n)

    def atleast(*tensors):
        ts = [grow(t) for t in _tensors(tensors)]
        return ts[0] if len(tensors) == 1 and not isinstance(tensors[0], (list, tuple)) else tuple(ts)
    return atleast


atleast_1d, atleast_2d, atleast_3d = _atleast(1), _atleast(2), _atleast(3)


def hstack(tensors):
    ts = atleast_1d(list(tensors))
    return cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors):
    return cat(atleast_2d(list(tensors)), 0)


def dstack(tensors):
    return cat(atleast_3d(list(tensors)), 2)


def column_stack(tensors):
    return cat([reshape(t, (t.numel(), 1)) if t.ndim <= 1 else t for t in tensors], 1)


def tensor_split(input, indices_or_sections, dim=0):
    """Views of ``input`` along ``dim``: ``n`` nearly equal parts (the first ``size % n``
    one longer), or the parts between the given indices (clamped, as slices are)."""
    d = wrap_dim(dim, input.ndim)
    n = input.shape[d]
    if hasattr(indices_or_sections, "tolist"):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        if k <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {k}")
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
        return S.split(input, sizes=tuple(sizes), dim=d)
    bounds = [0] + [min(max(int(i) if i >= 0 else n + int(i), 0), n) for i in indices_or_sections] + [n]
    return tuple(A.slice_along(input, d, a, max(a, b)) for a, b in zip(bounds, bounds[1:]))


def _split_dims(name, least, dim):
    def splitter(input, indices_or_sections):
        if input.ndim < least:
            raise RuntimeError(f"torch.{name} requires a tensor with at least {least} dimension, but got "
                               f"a tensor with {input.ndim} dimensions!")
        d = (1 if input.ndim > 1 else 0) if dim == "h" else dim
        if isinstance(indices_or_sections, int) and input.shape[d] % indices_or_sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but the size of "
                               f"the dimension {input.shape[d]} is not divisible by the split_size "
                               f"{indices_or_sections}!")
        return tensor_split(input, indices_or_sections, d)
    return splitter


hsplit, vsplit, dsplit = _split_dims("hsplit", 1, "h"), _split_dims("vsplit", 2, 0), _split_dims("dsplit", 3, 2)


def kron(input, other):
    return A.kron(input, other)


def cross(input, other, dim=None):
    if dim is None:
        shape = host.broadcast_shapes(tuple(input.shape), tuple(other.shape))
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=2)
    return linalg_cross(input, other, dim)


def linalg_cross(input, other, dim=-1):
    """``torch.linalg.cross``: operands of one rank broadcast; ``dim`` has size 3 in both."""
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    nd = input.ndim
    d = wrap_dim(dim, nd)
    for t in (input, other):
        if t.shape[d - nd + t.ndim] != 3:
            raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                               f"{input.shape[d - nd + input.ndim]} and {other.shape[d - nd + other.ndim]}")
    return A.cross(input, other, d - nd)


def diff(input, n=1, dim=-1, prepend=None, append=None):
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    d = wrap_dim(dim, input.ndim)
    pieces = [p for p in (prepend, input, append) if p is not None]
    for p in pieces:
        if p.ndim != input.ndim:
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    x = cat(pieces, d) if len(pieces) > 1 else input
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    if x.dtype is _dt.bool_:  # whether neighbours differ, as PyTorch's
        for _ in range(n):
            m = x.shape[d]
            x = x.narrow(d, 1, max(m - 1, 0)) != x.narrow(d, 0, max(m - 1, 0))
        return x
    return A.diff(x, n, d) if n else x


def rot90(input, k=1, dims=(0, 1)):
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = wrap_dim(dims[0], input.ndim), wrap_dim(dims[1], input.ndim)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    return A.rot90(input, k, (d0, d1))


def diag(input, diagonal=0):
    if input.ndim == 1:
        return A.diag_embed(input, offset=diagonal)
    if input.ndim == 2:
        return S.diagonal(input, offset=diagonal, dim1=0, dim2=1)
    raise RuntimeError("diag(): Supports 1D or 2D tensors. Got " + f"{input.ndim}D")


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    return A.diag_embed(input, offset, dim1, dim2)


def diagflat(input, offset=0):
    return A.diag_embed(reshape(input, (input.numel(),)), offset=offset)


def trace(input):
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return R.sum(S.diagonal(input, offset=0, dim1=0, dim2=1))


def tile(input, *given, dims=None):
    """``x.tile(3, 1, 1)`` or ``x.tile((3, 1, 1))`` (or ``dims=``), as PyTorch's method takes either."""
    from .shape import _keyword_form
    dims = tuple(shape_args(_keyword_form(given, dims, "tile", "dims")))
    x = A.unsqueeze_to(input, len(dims))
    return S.repeat(x, repeats=(1,) * (x.ndim - len(dims)) + dims)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    if repeats is None:  # repeat_interleave(counts): each position, count times
        counts = input.tolist()
        if any(c < 0 for c in counts):
            raise RuntimeError("repeats can not be negative")
        positions = host.repeat(host.arange(len(counts)), counts)
        from ..runtime.creation import tensor
        return tensor(positions, dtype=input.dtype, device=input.device)
    if hasattr(repeats, "tolist"):
        repeats = repeats.tolist()
    if isinstance(repeats, list) and any(r < 0 for r in repeats) or isinstance(repeats, int) and repeats < 0:
        raise RuntimeError("repeats can not be negative")
    if dim is None:
        input, d = reshape(input, (input.numel(),)), 0
    else:
        d = wrap_dim(dim, input.ndim)
    if isinstance(repeats, list) and len(repeats) not in (1, input.shape[d]):
        raise RuntimeError("repeats must have the same size as input along dim, but got repeats.size(0) = "
                           f"{len(repeats)} and input.size({d}) = {input.shape[d]}")
    if isinstance(repeats, list) and len(repeats) == 1:
        repeats = repeats[0]
    return A.repeat_interleave(input, repeats, d)


def block_diag(*tensors):
    if not tensors:  # (PyTorch's: a 1 x 0 matrix)
        from ..runtime.creation import empty
        return empty(1, 0)
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} "
                               f"has {t.ndim} dimensions")
    return A.block_diag(*tensors)


def take(input, index):
    """``input`` read as a flat array at ``index`` (the result has ``index``'s shape)."""
    flat = reshape(input, (input.numel(),))
    n = flat.shape[0]
    if index.numel():
        every = every_sample(index)  # (under vmap: every sample's indices)
        lo, hi = int(every.min()), int(every.max())
        if lo < -n or hi >= n:
            bad = hi if hi >= n else lo
            raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    return I.index_select(flat, index, dim=0)


FUNCTIONS = {n: globals()[n] for n in (
    "atleast_1d", "atleast_2d", "atleast_3d", "hstack", "vstack", "dstack", "column_stack",
    "tensor_split", "hsplit", "vsplit", "dsplit", "kron", "cross", "diff", "rot90", "diag",
    "diag_embed", "diagflat", "tile", "repeat_interleave", "block_diag", "take")}
FUNCTIONS["row_stack"] = vstack
METHODS = {n: globals()[n] for n in (
    "tensor_split", "hsplit", "vsplit", "dsplit", "kron", "cross", "diff", "rot90", "diag",
    "diag_embed", "diagflat", "trace", "tile", "repeat_interleave", "take")}
