"""Sorting and searching with PyTorch's signatures: sort, argsort, msort, topk, kthvalue,
searchsorted, bucketize, unique, unique_consecutive.

Orders come from the ``argsort`` rule (stable when asked, NaN after every number, so NaN
is the largest value as in PyTorch); values are read at those positions by
``take_ranked``, whose node is named after the function (``SortBackward0``,
``TopkBackward0``, ``KthvalueBackward0``) and whose gradient flows back to where each
value came from. Among equal values PyTorch's ``topk`` and ``kthvalue`` pick an index its
selection algorithm happens to reach; here it is the first in a stable order (the values
are the same).
"""
from ..rules import arrays as A
from ..rules import counting as C
from ..runtime.creation import tensor
from ..runtime.tensor import Tensor
from . import return_types
from ._args import wrap_dim
from .devices import on_device_of
from .no_derivative import refusing_backward


def sort(input, dim=-1, descending=False, stable=False):
    """Always a stable sort: PyTorch's CPU sort is stable in practice on short rows (ssd.pytorch's
    NMS keeps ``idx[-1]`` of an ascending sort among tied scores), and NumPy's default
    quicksort reverses ties even there; ``stable`` is accepted for the signature."""
    d = wrap_dim(dim, input.ndim) if input.ndim else 0
    values, indices = A.sort(input, d, descending=descending, stable=True)
    return return_types.sort(values, indices)


def argsort(input, dim=-1, descending=False, stable=False):
    d = wrap_dim(dim, input.ndim) if input.ndim else 0
    return A.argsort(input, dim=d, descending=descending, stable=True)


def msort(input):
    return sort(input, 0).values


def _ranked(input, dim, k, descending):
    """The first ``k`` positions of a stable sort along ``dim``, and the dim made non-negative."""
    d = wrap_dim(dim, input.ndim) if input.ndim else 0
    order = A.argsort(input, dim=d, descending=descending, stable=True)
    if input.ndim:
        order = A.slice_along(order, d, 0, k)
        if isinstance(order, Tensor):  # (a copy: contiguous as PyTorch's, so .view() works)
            order = order.contiguous()
    return order, d


def topk(input, k, dim=-1, largest=True, sorted=True):
    d = wrap_dim(dim, input.ndim) if input.ndim else 0
    if not 0 <= k <= (input.shape[d] if input.ndim else 1):
        raise RuntimeError("selected index k out of range")
    order, d = _ranked(input, d, k, largest)
    return return_types.topk(A.take_ranked(input, order, dim=d, op="topk"), order)


def kthvalue(input, k, dim=-1, keepdim=False):
    """The ``k``-th smallest value along ``dim`` (1-based) and its index."""
    d = wrap_dim(dim, input.ndim) if input.ndim else 0
    n = input.shape[d] if input.ndim else 1
    if n == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    order, d = _ranked(input, d, k, False)
    if input.ndim:
        order = A.slice_along(order, d, k - 1, k)
    values = A.take_ranked(input, order, dim=d, keepdim=keepdim or not input.ndim, op="kthvalue")
    if input.ndim and not keepdim:
        order = order.squeeze(d)
    return return_types.kthvalue(values, order)


# -- searching -----------------------------------------------------------------------------

def _side(right, side):
    if side is None:
        return bool(right)
    if side not in ("left", "right"):
        raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
    if right and side == "left":
        raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side "
                           "of left while right was True")
    return side == "right"


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """Where each of ``input`` would go in the innermost dim of ``sorted_sequence``."""
    right = _side(right, side)
    input = on_device_of(input, sorted_sequence) if isinstance(input, Tensor) else \
        tensor(input, device=sorted_sequence.device)
    bshape, vshape = list(sorted_sequence.shape), list(input.shape)
    if sorter is not None:
        if sorter.dtype.name != "int64":
            raise RuntimeError("torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                               f"{sorter.dtype.scalar_name}")
        if list(sorter.shape) != bshape:
            raise RuntimeError("torch.searchsorted(): boundary and sorter must have the same size, but got "
                               f"boundary tensor {bshape}and got sorter tensor {list(sorter.shape)}")
    if sorted_sequence.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           "dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {bshape} and input value tensor {vshape}")
    if sorted_sequence.ndim > 1 and bshape[:-1] != vshape[:-1]:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           "dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {bshape} and input value tensor {vshape}")
    return C.searchsorted(sorted_sequence, input, sorter, right=right, out_int32=bool(out_int32))


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each of ``input`` between 1-D ``boundaries``: ``searchsorted`` with
    the arguments swapped."""
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


# -- distinct values -----------------------------------------------------------------------

def _pick(values, inverse, counts, return_inverse, return_counts, input=None, name=None):
    if input is not None:
        values = refusing_backward(name, values, input)
    if not (return_inverse or return_counts):
        return values
    return (values,) + ((inverse,) if return_inverse else ()) + ((counts,) if return_counts else ())


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values (always sorted, as PyTorch's CPU kernel does whatever
    ``sorted`` says), with where each element went and how often each occurs."""
    d = None if dim is None else wrap_dim(dim, input.ndim)
    if d is None and input.ndim == 0:
        values, inverse, counts = C.unique(input.reshape(1))
        return _pick(values, inverse.reshape(()), counts, return_inverse, return_counts, input, "_unique2")
    return _pick(*C.unique(input, dim=d), return_inverse, return_counts, input, "_unique2")


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """One element (or slice along ``dim``) per run of equal ones."""
    d = None if dim is None else wrap_dim(dim, input.ndim)
    if d is None and input.ndim == 0:
        values, inverse, counts = C.unique_consecutive(input.reshape(1))
        return _pick(values, inverse.reshape(()), counts, return_inverse, return_counts, input,
                     "unique_consecutive")
    return _pick(*C.unique_consecutive(input, dim=d), return_inverse, return_counts, input, "unique_consecutive")


FUNCTIONS = {n: globals()[n] for n in (
    "sort", "argsort", "msort", "topk", "kthvalue", "searchsorted", "bucketize", "unique",
    "unique_consecutive")}
METHODS = {n: f for n, f in FUNCTIONS.items() if n not in ("searchsorted", "bucketize")}
