"""Elementwise arithmetic on sparse COO tensors, as graph code uses it: products with a
dense or a sparse tensor (``A * mask``, ``A * A``), the unary functions that keep zeros
zero (``abs``, ``sqrt``, ``pow`` with a positive exponent...), ``torch.sparse.softmax`` and
``log_softmax`` over the stored entries, ``torch.sparse.addmm``, ``dense.sparse_mask(s)``
and ``index_select`` along a sparse dim. Each is a composition of differentiable dense
operations on the values tensor, so gradients reach the values (and a dense operand) as
in PyTorch; the coordinates are computed on the host, as constants."""
import numbers

from .. import backend
from ..runtime.tensor import Tensor, wrap
from .arith import _is_sparse
from .coo import _linear, _make, refuse

__all__ = ["ZERO_PRESERVING", "addmm", "index_select", "log_softmax", "mul", "softmax", "sparse_mask"]

# Unary functions with f(0) = 0: applied to the stored values, the result has the same
# structure (PyTorch's sparse kernels of the same names).
ZERO_PRESERVING = ("abs", "neg", "sqrt", "square", "sin", "tan", "tanh", "asin", "atan", "sinh", "asinh",
                   "atanh", "expm1", "log1p", "sign", "sgn", "floor", "ceil", "round", "trunc", "frac",
                   "deg2rad", "rad2deg", "erf", "erfinv", "nan_to_num", "signbit", "isnan", "isinf")


def _plain(s, op):
    """``s`` coalesced, refusing the hybrid layouts (dense dims) these kernels do not cover."""
    if s.dense_dim():
        raise NotImplementedError(f"tracegrad: sparse {op} of a hybrid tensor (dense_dim={s.dense_dim()}) is not "
                                  "supported; call .to_dense() first")
    return s.coalesce()


def _unary(name):
    def fn(self, *args, **kwargs):
        s = _plain(self, name)
        return _make(s._ind, getattr(s._val, name)(*args, **kwargs), s._size, True)
    fn.__name__ = name
    return fn


def _pow(self, exponent):
    if not isinstance(exponent, numbers.Real) or exponent == 0:
        raise refuse("pow")  # (0 ** 0 is 1: the result would be dense; PyTorch refuses it too)
    s = _plain(self, "pow")
    return _make(s._ind, s._val ** exponent, s._size, True)


def mul(input, other):
    """``sparse * dense`` and ``dense * sparse`` (sparse, stored where the sparse one is),
    ``sparse * sparse`` (stored where both are), ``sparse * number``."""
    if not (_is_sparse(input) or _is_sparse(other)):
        return input * other
    if not _is_sparse(input):
        input, other = other, input
    if isinstance(other, numbers.Number) or isinstance(other, Tensor) and not _is_sparse(other) and other.ndim == 0:
        return _make(input._ind, input._val * other, input._size, input._coalesced)
    if not _is_sparse(other) and tuple(other.shape) != tuple(input.shape):
        other = other.expand(tuple(input.shape))  # (a dense operand broadcasts, as in PyTorch)
    if tuple(other.shape) != tuple(input.shape):
        raise RuntimeError(f"mul: expected sizes of 'self' and 'other' to match, but {list(input.shape)} != "
                           f"{list(other.shape)}")
    a = _plain(input, "mul")
    if not _is_sparse(other):  # the dense values at the stored coordinates
        picked = other[tuple(a._ind[d] for d in range(a.ndim))]
        return _make(a._ind, a._val * picked, a._size, True)
    b = _plain(other, "mul")
    xp = backend.namespace_of(a._ind._data)
    _, ia, ib = xp.intersect1d(_linear(a), _linear(b), assume_unique=True, return_indices=True)
    ia, ib = wrap(ia.astype(xp.int64)), wrap(ib.astype(xp.int64))
    return _make(a._ind.index_select(1, ia), a._val.index_select(0, ia) * b._val.index_select(0, ib), a._size, True)


def _groups(s, dim):
    """Each stored entry's group for a reduction along sparse ``dim``: the entries that
    share every other coordinate (host array), and the number of groups."""
    xp = backend.namespace_of(s._ind._data)
    ind = s._ind._data
    key = xp.zeros(ind.shape[1], dtype=xp.int64)
    for d in range(ind.shape[0]):
        if d != dim:
            key = key * s._size[d] + ind[d]
    unique, inverse = xp.unique(key, return_inverse=True)
    return inverse.reshape(-1).astype(xp.int64), len(unique)


def _softmax(input, dim, dtype, log):
    from ..ops.scatter_reduce import scatter_reduce
    from ..runtime.creation import full, zeros
    op = "log_softmax" if log else "softmax"
    s = _plain(input, op)
    d = dim % s.ndim
    values = s._val if dtype is None else s._val.to(dtype)
    if not values.dtype.is_floating_point:
        raise RuntimeError(f"{op}: expected a floating point tensor, got {values.dtype}")
    group, count = _groups(s, d)
    index = wrap(group)
    top = scatter_reduce(full((count,), float("-inf"), dtype=values.dtype), 0, index, values.detach(), "amax",
                         include_self=False)
    shifted = values - top.index_select(0, index)
    total = zeros(count, dtype=values.dtype).index_add(0, index, shifted.exp())
    out = shifted - total.log().index_select(0, index) if log else shifted.exp() / total.index_select(0, index)
    return _make(s._ind, out, s._size, True)


def softmax(input, dim, dtype=None):
    """``torch.sparse.softmax``: a softmax along ``dim`` over the stored entries only (the
    others count as -inf: they stay unstored)."""
    return _softmax(input, dim, dtype, log=False)


def log_softmax(input, dim, dtype=None):
    """``torch.sparse.log_softmax``: the log of :func:`softmax`, computed stably."""
    return _softmax(input, dim, dtype, log=True)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """``torch.sparse.addmm``: ``beta * mat + alpha * (mat1 @ mat2)`` for a sparse ``mat1``
    and dense ``mat`` and ``mat2`` (dense result)."""
    from .arith import sparse_mm_
    product = sparse_mm_(mat1, mat2)
    product = product if alpha == 1 else product * alpha
    return product + (mat if beta == 1 else mat * beta) if beta != 0 else product


def sparse_mask(self, mask):
    """``dense.sparse_mask(mask)``: the dense values at ``mask``'s stored coordinates, as a
    sparse tensor of ``mask``'s structure."""
    if not _is_sparse(mask):
        raise TypeError(f"sparse_mask(): argument 'mask' must be a sparse tensor, not {type(mask).__name__}")
    if tuple(self.shape) != tuple(mask.shape):
        raise RuntimeError("sparse_mask(): the number of sparse dimensions in `self` should match that of the `mask`")
    m = _plain(mask, "sparse_mask")
    return _make(m._ind, self[tuple(m._ind[d] for d in range(m.ndim))], m._size, True)


def index_select(self, dim, index):
    """The entries whose coordinate along sparse ``dim`` is named in ``index``, renumbered
    by their position in it (a coordinate named twice gives two copies)."""
    s = _plain(self, "index_select")
    d = dim % s.ndim
    xp = backend.namespace_of(s._ind._data)
    idx = xp.asarray(index._data if isinstance(index, Tensor) else index).reshape(-1).astype(xp.int64)
    if idx.size and (idx.min() < -s._size[d] or idx.max() >= s._size[d]):
        bad = int(idx.min()) if idx.min() < -s._size[d] else int(idx.max())
        raise IndexError(f"index out of range in self (index {bad} for dim {d} of size {s._size[d]})")
    idx = xp.where(idx < 0, idx + s._size[d], idx)  # (negative positions count from the end)
    coord = s._ind._data[d]
    entry, position = xp.nonzero(coord[:, None] == idx[None, :])  # (entry e, its new coordinate j)
    entry, position = wrap(entry.astype(xp.int64)), position.astype(xp.int64)
    ind = s._ind.index_select(1, entry).clone()
    ind[d] = wrap(position)
    size = list(s._size)
    size[d] = int(idx.size)
    return _make(ind, s._val.index_select(0, entry), tuple(size), False).coalesce()
