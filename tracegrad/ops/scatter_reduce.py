"""PyTorch's ``scatter_reduce``, ``index_reduce`` and ``put`` (and their in-place forms) over
the rules of :mod:`tracegrad.rules.scatter_reduce`: the argument checks, with PyTorch's
messages, and the 0-d cases (a 0-d tensor reduces as a one-element vector, as in PyTorch).

Differences from PyTorch: amax/amin with ``include_self=False`` share a position's gradient
among the ``src`` elements equal to its result only (PyTorch also counts an ``x`` that
happens to equal it, and drops that share); and ``index_reduce`` does not warn that it is
in beta.
"""
from ..rules import scatter_reduce as SR
from ..runtime.dispatch import apply_inplace
from ..runtime.tensor import Tensor
from ._args import every_sample, out_of_range, wrap_dim


def _not_implemented(kernel, dtype):
    return NotImplementedError(f'"{kernel}" not implemented for \'{dtype.scalar_name}\'')


def _as_vector(t):
    """A 0-d tensor as a one-element vector (a view), anything else as it is."""
    return t.reshape(1) if t.ndim == 0 else t


def _is_tensor(value):
    """A Tensor, or a tape's tracer of one."""
    return isinstance(value, Tensor) or getattr(value, "is_traced_tensor", False)


def _needs_tensor(fn, name, position, value):
    if not _is_tensor(value):
        raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be Tensor, not "
                        f"{type(value).__name__}")


def _needs_bool(fn, include_self):
    if not isinstance(include_self, bool):
        raise TypeError(f"{fn}(): argument 'include_self' must be bool, not {type(include_self).__name__}")


# -- scatter_reduce ------------------------------------------------------------------------------

def _scatter_args(input, dim, index, src, reduce, include_self):
    """(self, index, src as the rule takes them, dim): checked as PyTorch checks them."""
    _needs_tensor("scatter_reduce", "src", 3, src)
    _needs_bool("scatter_reduce", include_self)
    if reduce not in SR.REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    d = wrap_dim(dim, input.ndim)
    if not _is_tensor(index) or index.dtype.category != 1:
        raise RuntimeError("scatter(): Expected dtype int32/int64 for index")
    if src.dtype != input.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    kind = input.dtype.category
    if (reduce == "mean" and kind == 0) or (reduce in ("amax", "amin") and kind == 3):
        raise _not_implemented(f"scatter_gather_tensor_cpu_reduce_{reduce}", input.dtype)
    if input.ndim == 0:  # (PyTorch reads a 0-d self, index and src as vectors)
        index, src = index.reshape(-1), src.reshape(-1)
    target = _as_vector(input)
    if index.ndim != target.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if src.ndim != target.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    if index.numel():
        fits = all(i <= s for i, s in zip(index.shape, src.shape)) and all(
            i <= t for k, (i, t) in enumerate(zip(index.shape, target.shape)) if k != d)
        if not fits:
            raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self "
                               f"{list(target.shape)} apart from dimension {d} and to be no larger size "
                               f"than src {list(src.shape)}")
        size = target.shape[d]
        bad = out_of_range(index, size)
        if bad is not None:
            raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size {size}")
    return target, index, src, d


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """``src`` reduced into ``input`` at the positions ``index`` names along ``dim``
    (``reduce``: "sum", "prod", "mean", "amax" or "amin"); with ``include_self=False``,
    ``input``'s values at those positions take no part."""
    target, index, src, d = _scatter_args(input, dim, index, src, reduce, include_self)
    out = SR.scatter_reduce(target, index, src, dim=d, reduce=reduce, include_self=include_self)
    return out.reshape(()) if input.ndim == 0 else out


def scatter_reduce_(input, dim, index, src, reduce, *, include_self=True):
    target, index, src, d = _scatter_args(input, dim, index, src, reduce, include_self)
    apply_inplace(SR.scatter_reduce, (target, index, src), {"dim": d, "reduce": reduce, "include_self": include_self})
    return input


# -- index_reduce --------------------------------------------------------------------------------

_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


def _index_args(input, dim, index, source, reduce, include_self):
    _needs_tensor("index_reduce", "source", 3, source)
    _needs_bool("index_reduce", include_self)
    if reduce not in _INDEX_REDUCTIONS:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    d = wrap_dim(dim, input.ndim)
    if not _is_tensor(index) or index.dtype.category != 1:
        got = index.dtype.scalar_name if _is_tensor(index) else type(index).__name__
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got: {got}")
    if index.ndim > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, but got dim: {index.ndim} with type: "
                         f"{index.dtype.scalar_name} and size: {list(index.shape)}")
    if source.dtype != input.dtype:
        raise RuntimeError(f"index_reduce_(): self ({input.dtype.scalar_name}) and source "
                           f"({source.dtype.scalar_name}) must have the same scalar type")
    if input.dtype.category in (0, 3):
        raise _not_implemented("index_func_", input.dtype)
    target, source, index = _as_vector(input), _as_vector(source), index.reshape(-1)
    if source.ndim != target.ndim or any(s != t for k, (s, t) in enumerate(zip(source.shape, target.shape))
                                         if k != d):
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the specified dimension. "
                           f"Got self.shape = {list(input.shape)} source.shape = {list(source.shape)}")
    if index.numel() != source.shape[d]:
        raise RuntimeError(f"index_reduce_(): Number of indices ({index.numel()}) should be equal to "
                           f"source.size(dim): ({source.shape[d]}), for dim: {d}")
    if index.numel():
        every = every_sample(index)
        if int(every.min()) < 0 or int(every.max()) >= target.shape[d]:
            raise IndexError("index out of range in self")
    return target, index, source, d


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """Slice ``k`` of ``source`` along ``dim`` reduced into slice ``index[k]`` of ``input``
    (``reduce``: "prod", "mean", "amax" or "amin")."""
    target, index, source, d = _index_args(input, dim, index, source, reduce, include_self)
    out = SR.index_reduce(target, index, source, dim=d, reduce=reduce, include_self=include_self)
    return out.reshape(()) if input.ndim == 0 else out


def index_reduce_(input, dim, index, source, reduce, *, include_self=True):
    target, index, source, d = _index_args(input, dim, index, source, reduce, include_self)
    apply_inplace(SR.index_reduce, (target, index, source), {"dim": d, "reduce": reduce,
                                                             "include_self": include_self})
    return input


# -- put -----------------------------------------------------------------------------------------

def _put_args(input, index, source, fn):
    _needs_tensor(fn, "source", 2, source)
    if not _is_tensor(index) or index.dtype.name != "int64":
        got = index.dtype.scalar_name if _is_tensor(index) else type(index).__name__
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {got}")
    if source.dtype != input.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{input.dtype.scalar_name} and source.dtype = {source.dtype.scalar_name}")
    if source.numel() != index.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    n = input.numel()
    if index.numel() == 0:
        return index
    if n == 0:
        raise IndexError("put_(): Tried to put elements into an empty tensor")
    every = every_sample(index).reshape(-1)  # (under vmap: every sample's indices)
    if int(every.min()) < -n or int(every.max()) >= n:
        bad = int(every[(every < -n) | (every >= n)][0])
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    return index.remainder(n)  # (negative positions count from the end)


def put(input, index, source, accumulate=False):
    """``input`` as a flat (row-major) tensor with ``source`` written at ``index`` (summed
    into it if ``accumulate``)."""
    index = _put_args(input, index, source, "put")
    return SR.put(input, index, source, accumulate=accumulate)


def put_(input, index, source, accumulate=False):
    index = _put_args(input, index, source, "put_")
    return apply_inplace(SR.put, (input, index, source), {"accumulate": accumulate})




# -- segment_reduce ------------------------------------------------------------------------------

_SEGMENT_REDUCTIONS = {"sum": "sum", "prod": "prod", "mean": "mean", "amax": "amax", "amin": "amin",
                       "max": "amax", "min": "amin"}
_EMPTY = {"sum": 0.0, "prod": 1.0, "mean": float("nan"), "amax": float("-inf"), "amin": float("inf")}


def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None):
    """``data`` reduced over consecutive segments along ``axis`` (their ``lengths``, or the
    ``offsets`` between them; batched lengths have one row per index of the dims before
    ``axis``), as PyTorch's ``segment_reduce``: an empty segment gives ``initial``, or the
    reduction's identity (``nan`` for a mean); with ``initial``, each segment's reduction
    includes it (a mean divides by the segment's length alone). Built on ``scatter_reduce``,
    so the gradient is its gradient (ties of a max share it)."""
    from .. import backend
    from ..runtime.creation import full, tensor
    if reduce not in _SEGMENT_REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if indices is not None and lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    host = backend.cpu
    if lengths is not None:
        counts = host.asarray(lengths.cpu().numpy() if _is_tensor(lengths) else lengths).astype(host.int64)
    else:
        counts = host.diff(host.asarray(offsets.cpu().numpy() if _is_tensor(offsets) else offsets), axis=-1)
    d = wrap_dim(axis, data.ndim)
    if d != counts.ndim - 1:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of lengths but got {axis}.")
    if (counts < 0).any():
        raise RuntimeError("lengths contains negative value!")
    if not unsafe and (counts.sum(axis=-1) != data.shape[d]).any():
        raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum to "
                           "data.size(lengths.dim()-1) when !unsafe.")
    if not data.dtype.is_floating_point:
        raise _not_implemented("_segment_reduce_cpu", data.dtype)
    op = _SEGMENT_REDUCTIONS[reduce]
    ends = host.cumsum(counts, axis=-1)  # each position's segment: the first end above it
    rows = ends.reshape(-1, ends.shape[-1])
    seg = host.stack([host.searchsorted(r, host.arange(data.shape[d]), side="right") for r in rows])
    seg = seg.reshape(counts.shape[:-1] + (data.shape[d],))
    # (positions past the last end -- unsafe lengths summing short -- go to one more
    # segment, dropped below)
    seg = seg.reshape(seg.shape + (1,) * (data.ndim - d - 1))
    index = tensor(host.broadcast_to(seg, data.shape).copy(), device=data.device)
    segments = counts.shape[-1]
    shape = list(data.shape)
    shape[d] = segments + 1
    def kept(t):  # (the real segments: the extra one dropped)
        return t.narrow(d, 0, segments)
    if op == "mean":  # (initial + sum) / length: an empty segment is initial, or nan
        total = kept(scatter_reduce(full(shape, 0.0 if initial is None else initial, dtype=data.dtype,
                                         device=data.device), d, index, data, "sum", include_self=True))
        n = tensor(counts.reshape(counts.shape + (1,) * (data.ndim - d - 1)), dtype=data.dtype, device=data.device)
        empty = _EMPTY["mean"] if initial is None else initial
        return total.div(n.clamp(min=1)).where(n > 0, tensor(empty, dtype=data.dtype, device=data.device))
    if op in ("amax", "amin") and initial is not None:
        # the data's extreme, then initial where it wins or the segment is empty: a tie with
        # initial leaves the gradient with the data (initial is a constant), as in PyTorch
        best = kept(scatter_reduce(full(shape, _EMPTY[op], dtype=data.dtype, device=data.device), d, index, data, op,
                                   include_self=False))
        worse = best < initial if op == "amax" else best > initial
        return best.where(~worse, tensor(initial, dtype=data.dtype, device=data.device))
    start = _EMPTY[op] if initial is None else initial
    return kept(scatter_reduce(full(shape, start, dtype=data.dtype, device=data.device), d, index, data, op,
                               include_self=initial is not None))


FUNCTIONS = {"scatter_reduce": scatter_reduce, "index_reduce": index_reduce, "put": put}
METHODS = dict(FUNCTIONS, scatter_reduce_=scatter_reduce_, index_reduce_=index_reduce_, put_=put_)
FUNCTIONS["segment_reduce"] = segment_reduce  # (a function only, as in PyTorch)
