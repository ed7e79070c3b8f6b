"""Building and rearranging arrays: the orderings behind sorting (``argsort``,
``argpartition``), and the compositions of shape and index rules that PyTorch's and
NumPy's names share (kron, cross, diff, rot90, diag_embed, sort, repeat_interleave,
block_diag, take_along, unflat_take).

The two orderings are primitives. They have no derivative (integers), but a sort's
order depends on the values, so it must be an operation of its own: recorded on a tape,
it is computed again when the tape is replayed on new values, where an order worked out
while tracing would be a stale constant. ``take_ranked`` reads values at an ordering's
positions: a ``gather`` under the node name of the PyTorch function it serves
(``SortBackward0``, ``TopkBackward0``, ``KthvalueBackward0``), with gather's derivative.
Everything else here is a plain function of other rules (gather, index_select, diagonal_scatter, flip, mul...), so it needs no
derivative of its own, and it runs on arrays, eager Tensors and tape tracers alike: the
eager functions (:mod:`tracegrad.ops.arrays`) and the NumPy map
(:mod:`tracegrad.transform.tape.numpy_map`) call the same code with their own signatures.

Dims here are non-negative, and index arrays that depend only on shapes (a repeat's,
a pad's) are built with NumPy on the host: :func:`index_like` puts them on the device of
the array they index (the tape moves host constants itself).
"""
import math

from .. import backend
from ..backend import cpu as host  # index arrays worked out on the host
from .arith import mul, sub
from .broadcast import broadcast_to, zeros_of
from .core import KEEP, primitive
from .index import basic_index, gather, gather_vjp, index_select
from .memory import clone
from .shape import cat, diagonal_scatter, flip, reshape, stack, transpose, unsqueeze

__all__ = [
    "argpartition",
    "argsort",
    "block_diag",
    "cross",
    "diag_embed",
    "diff",
    "index_like",
    "kron",
    "repeat_interleave",
    "rot90",
    "select_along",
    "slice_along",
    "sort",
    "take_along",
    "take_ranked",
    "unflat_take",
    "unsqueeze_to",
]


# -- the orderings (primitives without derivatives) ------------------------------------------

@primitive(dtypes=KEEP)
def argsort(xp, x, *, dim=-1, descending=False, stable=False):
    """The indices that sort ``x`` along ``dim`` (NaN last, as NumPy and PyTorch). A
    descending sort keeps equal values in their order, as a stable ascending one does:
    it is the ascending sort of the reversed array, read backwards."""
    if x.ndim == 0:
        return xp.zeros((), dtype=xp.int64)
    kind = "stable" if stable or descending else None
    if not descending:
        return xp.argsort(x, axis=dim, kind=kind).astype(xp.int64)
    n = x.shape[dim]
    up = xp.argsort(xp.flip(x, dim), axis=dim, kind=kind)
    return xp.flip(n - 1 - up, dim).astype(xp.int64)


@primitive(dtypes=KEEP)
def argpartition(xp, x, *, kth, dim=-1):
    """NumPy's ``argpartition``: the element of rank ``kth`` (an int or a tuple) in its
    sorted place, smaller ones before it and larger ones after."""
    return xp.argpartition(x, kth, axis=dim).astype(xp.int64)


def _ranked_node(args, params):
    return params.get("op", "sort").capitalize() + "Backward0"


@primitive(_ranked_node, dtypes=KEEP, linear=True, saved_names=("self", "indices"))
def take_ranked(xp, x, order, *, dim, keepdim=True, op="sort"):
    """``x``'s values at the positions ``order`` picks along ``dim`` (a sort's, a topk's or a
    kthvalue's indices); ``keepdim=False`` drops ``dim`` (of size 1: kthvalue's)."""
    out = xp.take_along_axis(x, order, axis=dim) if x.ndim else x.copy()
    return out if keepdim else xp.squeeze(out, axis=dim)


@take_ranked.vjp("x", uses="order")  # as PyTorch: the indices and x's size, not x itself
def take_ranked_vjp(g, out, x, order, *, dim, keepdim=True, op="sort"):
    if not x.ndim:
        return g
    if not keepdim:
        g = unsqueeze(g, dim=dim)
    return gather_vjp(g, None, x, order, dim=dim)


# -- helpers -----------------------------------------------------------------------------------

def index_like(like, values):
    """``values`` as an int64 index array on the device of ``like`` (an eager Tensor's
    array, or the host for everything else: the tape moves host constants itself)."""
    arr = host.asarray(values, dtype=host.int64)
    data = getattr(like, "_data", None)
    return arr if data is None else backend.move(arr, backend.namespace_of(data))


def select_along(x, dim, i):
    """``x[..., i, ...]`` with ``i`` at dim ``dim`` (a view)."""
    return basic_index(x, index=(slice(None),) * dim + (i,))


def slice_along(x, dim, start=None, stop=None, step=None):
    return basic_index(x, index=(slice(None),) * dim + (slice(start, stop, step),))


# -- compositions ------------------------------------------------------------------------------

def sort(x, dim=-1, descending=False, stable=False):
    """``(values, indices)``: the values gathered in their sorted order, so the gradient
    flows back to where each value came from."""
    dim = dim % x.ndim if x.ndim else 0
    order = argsort(x, dim=dim, descending=descending, stable=stable)
    return take_ranked(x, order, dim=dim), order


def take_along(x, indices, dim):
    """``take_along_axis``: ``gather`` after broadcasting ``x`` and ``indices`` against each
    other in every dim but ``dim``."""
    shape_x, shape_i = list(x.shape), list(indices.shape)
    if len(shape_x) != len(shape_i):
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    common = [a if b == 1 else b for a, b in zip(shape_x, shape_i)]
    for k, (a, b) in enumerate(zip(shape_x, shape_i)):
        if k != dim and a != b and 1 not in (a, b):
            raise ValueError(f"shape mismatch: indices {tuple(shape_i)} cannot be broadcast "
                             f"with an array of shape {tuple(shape_x)}")
    want_x = tuple(s if k == dim else c for k, (s, c) in enumerate(zip(shape_x, common)))
    want_i = tuple(s if k == dim else c for k, (s, c) in enumerate(zip(shape_i, common)))
    if want_x != tuple(shape_x):
        x = broadcast_to(x, shape=want_x)
    if want_i != tuple(shape_i):
        indices = broadcast_to(indices, shape=want_i)
    return gather(x, indices, dim=dim)


def unflat_take(x, positions):
    """The elements of ``x`` at flat ``positions`` (a host int array of any shape), read
    in C order: NumPy's ``take`` without an axis, and every function that only moves
    elements around (insert, delete, pad's index modes) once its positions are known."""
    flat = reshape(x, shape=(math.prod(x.shape),))
    return index_select(flat, index_like(x, positions), dim=0)


def kron(a, b):
    """The Kronecker product: ``a``'s and ``b``'s dims interleaved by one broadcasting
    product, then merged pairwise."""
    nd = max(a.ndim, b.ndim)
    sa = (1,) * (nd - a.ndim) + tuple(a.shape)
    sb = (1,) * (nd - b.ndim) + tuple(b.shape)
    a = reshape(a, shape=tuple(v for s in sa for v in (s, 1)))
    b = reshape(b, shape=tuple(v for s in sb for v in (1, s)))
    return reshape(mul(a, b), shape=tuple(p * q for p, q in zip(sa, sb)))


def cross(a, b, dim):
    """The cross product of 3-vectors along ``dim`` (counted from the end when negative,
    so that operands of different ranks broadcast)."""
    back = dim - max(a.ndim, b.ndim) if dim >= 0 else dim
    tail = (slice(None),) * (-back - 1)

    def part(v, i):
        return basic_index(v, index=(Ellipsis, i) + tail)
    a0, a1, a2 = (part(a, i) for i in range(3))
    b0, b1, b2 = (part(b, i) for i in range(3))
    parts = [sub(mul(a1, b2), mul(a2, b1)), sub(mul(a2, b0), mul(a0, b2)), sub(mul(a0, b1), mul(a1, b0))]
    return stack(*parts, dim=back % (parts[0].ndim + 1))


def diff(x, n=1, dim=-1):
    """The ``n``-th forward difference along ``dim``."""
    dim %= x.ndim
    for _ in range(n):
        x = sub(slice_along(x, dim, 1, None), slice_along(x, dim, None, -1))
    return x


def rot90(x, k=1, dims=(0, 1)):
    """``x`` turned by ``k`` quarter turns in the plane of ``dims``, from the first
    towards the second (NumPy's and PyTorch's direction)."""
    d0, d1 = dims
    k %= 4
    if k == 0:
        return clone(x)
    if k == 2:
        return flip(x, dims=(d0, d1))
    if k == 1:
        return transpose(flip(x, dims=(d1,)), dim0=d0, dim1=d1)
    return flip(transpose(x, dim0=d0, dim1=d1), dims=(d1,))


def diag_embed(v, offset=0, dim1=-2, dim2=-1):
    """Zeros with ``v``'s last dim written on a diagonal of two new dims (PyTorch's
    ``diag_embed``; ``diag`` of a vector is the 2-D case)."""
    n = v.shape[-1] + abs(offset)
    nd = v.ndim + 1
    d1, d2 = dim1 % nd, dim2 % nd
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    rest = iter(v.shape[:-1])
    shape = tuple(n if k in (d1, d2) else next(rest) for k in range(nd))
    return diagonal_scatter(zeros_of(v, shape=shape), v, offset=offset, dim1=d1, dim2=d2)


def repeat_interleave(x, repeats, dim):
    """Each slice of ``x`` along ``dim`` repeated ``repeats`` times (an int, or one
    count per slice): an ``index_select`` of repeated positions."""
    positions = host.repeat(host.arange(x.shape[dim]), repeats)
    return index_select(x, index_like(x, positions), dim=dim)


def block_diag(*blocks):
    """The 2-D blocks (0-d and 1-d ones made 1 x 1 and 1 x n) along a diagonal: each
    padded with zero columns to the full width, then stacked downwards."""
    from .nn import constant_pad_nd
    mats = [reshape(b, shape=(1,) * (2 - b.ndim) + tuple(b.shape)) if b.ndim < 2 else b for b in blocks]
    width = sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        rows.append(constant_pad_nd(m, pad=(left, width - left - m.shape[1])))
        left += m.shape[1]
    return cat(*rows, dim=0)


def unsqueeze_to(x, ndim, front=True):
    """``x`` with size-1 dims added (in front, or at the end) up to ``ndim`` dims."""
    while x.ndim < ndim:
        x = unsqueeze(x, dim=0 if front else x.ndim)
    return x
