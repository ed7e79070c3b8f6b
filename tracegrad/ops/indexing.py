"""Indexing with PyTorch's semantics: ``x[...]``, ``x[...] = v``, gather/scatter and friends.

``split_index`` separates a user index into a static structure and the index arrays, so
basic indexing becomes a view rule and advanced indexing a copying rule whose gradient
scatter-adds. ``x[i] = v`` is a write through a view (``CopySlices``) for basic indices and
``index_put_`` for advanced ones, as in PyTorch.
"""
import numbers
import warnings

from .. import backend
from ..rules import index as I
from ..rules.memory import copy
from ..runtime import grad_mode
from ..runtime.dispatch import apply_inplace
from ..runtime.shapes import broadcast_shapes
from ..runtime.tensor import Tensor
from ._args import out_of_range, scalar, wrap_dim
from ._args import per_sample as _per_sample
from .devices import on_device_of

_INDEX_KINDS = "biu"


def split_index(x, index):
    """(structure, arrays, is_basic) for ``x[index]``; checks bounds and steps. The index
    arrays are on ``x``'s device (PyTorch takes CPU indices for a CUDA tensor too)."""
    if not isinstance(index, tuple):
        index = tuple(index) if _sequence_as_tuple(index) else (index,)
    if any(isinstance(p, Tensor) and p.dtype.name == "uint8" for p in index):
        warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead.",
                      UserWarning, stacklevel=3)
        index = tuple(p.bool() if isinstance(p, Tensor) and p.dtype.name == "uint8" else p for p in index)
    xp = backend.namespace_of(x._data)
    parts, arrays = [], []
    dim = 0
    looked_up = 0  # the index tensors so far (a mask counts one per dim): PyTorch's kernel
    ndim = x.ndim  # numbers a bad index by its place among them, not by the dim it indexes
    consumed = sum(1 for p in index if p is not None and p is not Ellipsis and not _is_mask(p))
    consumed += sum(p.ndim for p in index if _is_mask(p))
    for p in index:
        if isinstance(p, Tensor) and p.ndim == 0 and p.dtype.category == 1 and not _per_sample(p):
            p = p.item()
        if p is None:
            parts.append(None)
        elif p is Ellipsis:
            parts.append(Ellipsis)
            dim += ndim - consumed
        elif isinstance(p, bool):
            parts.append(I.ARRAY)
            arrays.append(xp.asarray(p))
            looked_up += 1
        elif isinstance(p, numbers.Integral):  # NumPy's integer scalars index as ints too
            p = int(p)
            if dim >= ndim:
                raise IndexError(f"too many indices for tensor of dimension {ndim}")
            size = x.shape[dim]
            if not -size <= p < size:
                raise IndexError(f"index {p} is out of bounds for dimension {dim} with size {size}")
            parts.append(p)
            dim += 1
        elif isinstance(p, slice):
            if p.step is not None and scalar(p.step) <= 0:
                raise ValueError("step must be greater than zero")
            parts.append(slice(scalar(p.start), scalar(p.stop), scalar(p.step)))
            dim += 1
        else:
            operand = _index_array(p, x, xp)
            arr = operand._data if isinstance(operand, Tensor) else operand
            if _per_sample(operand):  # (its bounds are checked by the kernel, sample by sample)
                step = arr.ndim if arr.dtype.kind == "b" else 1
                dim += step
                looked_up += step
            elif arr.dtype.kind == "b":
                _check_mask(x, arr, dim)
                dim += arr.ndim
                looked_up += arr.ndim
            else:
                if dim < ndim and arr.size:
                    size = x.shape[dim]
                    if int(arr.max()) >= size or int(arr.min()) < -size:
                        first = int(((arr >= size) | (arr < -size)).argmax())
                        bad = int(arr.reshape(-1)[first])
                        raise IndexError(f"index {bad} is out of bounds for dimension {looked_up} with "
                                         f"size {size}")
                dim += 1
                looked_up += 1
            parts.append(I.ARRAY)
            arrays.append(operand)
    if dim > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    return tuple(parts), arrays, not arrays


def _sequence_as_tuple(index):
    """PyTorch's legacy rule: a list (of fewer than 32 items) holding a tensor, a sequence, a
    slice, ``None`` or ``...`` indexes as the tuple of its items (``adj[[src, dst]] = 1``),
    with its deprecation warning; any other list is one index array."""
    if not isinstance(index, list) or len(index) >= 32:
        return False
    if not any(isinstance(p, (Tensor, list, tuple, slice, backend.cpu.ndarray)) or p is None or p is Ellipsis
               for p in index):
        return False
    warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed in "
                  "pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted as "
                  "tensor index, x[torch.tensor(seq)], which will result either in an error or a different result",
                  UserWarning, stacklevel=4)
    return True


def _is_mask(p):
    return (isinstance(p, Tensor) and p.dtype.name == "bool") or (
        hasattr(p, "dtype") and not isinstance(p, Tensor) and getattr(p.dtype, "kind", "") == "b")


def _index_array(p, x, xp):
    """Index ``p`` as an operand of the indexing rule: an index tensor on ``x``'s device
    as it is (saved for the backward as a tensor, whose version is checked there, as
    PyTorch checks it: an index changed in place afterwards would scatter the gradient to
    other positions), else an array of ``x``'s namespace ``xp``."""
    if _per_sample(p):
        if p._data.dtype.kind not in _INDEX_KINDS:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return p
    if isinstance(p, Tensor):
        ns = backend.namespace_of(p._data)
        if ns is not xp and ns is not backend.cpu:
            raise RuntimeError("indices should be either on cpu or on the same device as the "
                               f"indexed tensor ({x.device})")
        if p._data.dtype.kind not in _INDEX_KINDS:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return p if ns is xp else backend.move(p._data, xp)  # (moved: a copy of its own)
    else:
        host = backend.cpu.asarray(p)
        if host.size == 0 and isinstance(p, (list, tuple)):  # (``x[[]]``: no positions, not floats)
            host = host.astype(backend.cpu.int64)
        arr = backend.move(host, xp)
    if arr.dtype.kind not in _INDEX_KINDS:
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return arr


def _check_mask(x, mask, dim):
    want = tuple(x.shape[dim:dim + mask.ndim])
    if tuple(mask.shape) != want:
        for i, (m, s) in enumerate(zip(mask.shape, want)):
            if m != s:
                raise IndexError(f"The shape of the mask {list(mask.shape)} at index {i} does not "
                                 f"match the shape of the indexed tensor {list(x.shape)} at index {dim + i}")


def getitem(x, index):
    structure, arrays, basic = split_index(x, index)
    if basic:
        return basic_view(x, structure, whole=not isinstance(index, tuple))
    selects, structure = _ints_first(structure, arrays)
    if selects is not None:
        x = basic_view(x, selects)
    return I.advanced_index(x, *arrays, index=structure)


def _ints_first(structure, arrays):
    """``(selects, rest)``: an index mixing integers with index arrays as PyTorch reads it,
    the integers first -- each a ``select``, a basic index -- then the arrays on what is
    left. NumPy counts such integers among the advanced indices instead, which moves the
    indexed dims to the front when a slice stands between them (``x[1, :, [2, 0, 1]]`` is
    (3, 3) in both, transposed in NumPy). ``selects`` is None without integers."""
    if not any(type(part) is int for part in structure):
        return None, structure
    selects, rest, found = [], [], iter(arrays)
    for part in structure:
        if type(part) is int:
            selects.append(part)
        elif part is I.ARRAY:
            a = next(found)
            mask = (a._data if isinstance(a, Tensor) else a).dtype.kind == "b"
            selects += [slice(None)] * (a.ndim if mask else 1)
            rest.append(part)
        elif part is None:
            rest.append(part)
        else:  # (a slice or the ellipsis: the same in both)
            selects.append(slice(None) if isinstance(part, slice) else part)
            rest.append(part)
    return tuple(selects), tuple(rest)


def basic_view(x, structure, whole=False):
    """``x[structure]`` as PyTorch records it: one view per indexed dimension (a select per
    int, a slice per slice that is not the whole dimension, an unsqueeze per None), or an
    alias when nothing changes. ``whole``: a lone slice index, always recorded. With
    nothing to record, one view does it all."""
    if not (x._requires_grad and grad_mode.state.mode == grad_mode.GRAD):
        return I.basic_index(x, index=tuple(structure))
    steps = _view_steps(tuple(x.shape), structure, whole)
    if not steps:
        return I.basic_index(x, index=())
    for step in steps:
        x = I.basic_index(x, index=step)
    return x


def _view_steps(shape, structure, whole):
    ndim = len(shape)
    shape = list(shape)
    consumed = sum(1 for part in structure if part is not None and part is not Ellipsis)
    steps, dim = [], 0
    for part in structure:
        lead = (slice(None),) * dim
        if part is Ellipsis:
            dim += ndim - consumed
        elif part is None:
            steps.append(lead + (None,))
            shape.insert(dim, 1)
            dim += 1
        elif isinstance(part, int):
            steps.append(lead + (part,))
            del shape[dim]
        else:
            start, stop, step = part.indices(shape[dim])
            if whole or (start, stop, step) != (0, shape[dim], 1):
                steps.append(lead + (part,))
            shape[dim] = len(range(start, stop, step))
            dim += 1
    return steps


def setitem(x, index, value):
    structure, arrays, basic = split_index(x, index)
    if basic:  # a copy_ into a view, which takes a source on another device too
        value = on_device_of(value, x)
        apply_inplace(copy, (basic_view(x, structure, whole=not isinstance(index, tuple)), value), {})
    else:
        selects, structure = _ints_first(structure, arrays)
        target = x if selects is None else basic_view(x, selects)
        try:
            apply_inplace(I.index_put, (target, value) + tuple(arrays), {"index": structure, "accumulate": False})
        except (RuntimeError, ValueError):
            if isinstance(value, Tensor):  # (PyTorch's message where the value is the trouble)
                _check_broadcasts_to_picked(target, value, structure, arrays)
            raise


def _check_broadcasts_to_picked(target, value, structure, arrays):
    """PyTorch's message for a value that does not broadcast to what ``target[index]``
    picks (the shape found on a stand-in of no memory)."""
    host = [a._data if isinstance(a, Tensor) else a for a in arrays]
    if any(_per_sample(a) or not isinstance(h, backend.cpu.ndarray) for a, h in zip(arrays, host)):
        return
    stand_in = backend.cpu.broadcast_to(backend.cpu.zeros((), backend.cpu.int8), tuple(target.shape))
    picked = stand_in[I.fill_index(structure, host)].shape
    shape = list(value.shape)
    while len(shape) > len(picked) and shape[0] == 1:  # (leading 1s dropped, as PyTorch does)
        shape.pop(0)
    try:
        ok = len(shape) <= len(picked) and broadcast_shapes(tuple(shape), picked) == tuple(picked)
    except RuntimeError:
        ok = False
    if not ok:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(value.shape)} cannot be broadcast to "
                           f"indexing result of shape {list(picked)}")


def _same_dtype(input, source, message):
    """torch's ops that write a source tensor into ``input`` refuse another dtype (a cast
    would silently change the values written); ``message`` takes ``{d}`` and ``{s}``."""
    if isinstance(source, Tensor) and isinstance(input, Tensor) and source.dtype != input.dtype:
        raise RuntimeError(message.format(d=input.dtype.scalar_name, s=source.dtype.scalar_name))


_INDEX_PUT_DTYPES = ("Index put requires the source and destination dtypes match, got {d} for the "
                     "destination and {s} for the source.")
_SCATTER_DTYPES = "scatter(): Expected self.dtype to be equal to src.dtype"


def index_put(input, indices, values, accumulate=False):
    _same_dtype(input, values, _INDEX_PUT_DTYPES)
    structure, arrays, _ = split_index(input, tuple(indices))
    return I.index_put(input, values, *arrays, index=structure, accumulate=accumulate)


def index_put_(input, indices, values, accumulate=False):
    _same_dtype(input, values, _INDEX_PUT_DTYPES)
    structure, arrays, _ = split_index(input, tuple(indices))
    return apply_inplace(I.index_put, (input, values) + tuple(arrays),
                         {"index": structure, "accumulate": accumulate})


_INDEX_DTYPES = {"gather": "int32/int64", "scatter": "int32/int64", "scatter_add": "int32/int64",
                 "index_select": "int32 or int64"}


def _check_index(input, dim, index, what):
    """The index's dtype and range, with PyTorch's messages (NumPy would wrap negatives)."""
    if not isinstance(index, Tensor) or index.dtype.category != 1:
        raise RuntimeError(f"{what}(): Expected dtype {_INDEX_DTYPES[what]} for index")
    d = wrap_dim(dim, input.ndim)
    size = input.shape[d] if input.ndim else 1
    bad = out_of_range(index, size)
    if bad is not None:
        if what == "index_select":
            raise RuntimeError(f"INDICES element is out of DATA bounds, id={bad} axis_dim={size}")
        raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size {size}")
    return d


def index_select(input, dim, index):
    d = _check_index(input, dim, index, "index_select")
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    return I.index_select(input, index, dim=d)


def gather(input, dim, index, *, sparse_grad=False):
    d = _check_index(input, dim, index, "gather")
    if index.ndim != input.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for k, (a, b) in enumerate(zip(index.shape, input.shape)):
        if k != d and a > b:
            raise RuntimeError(f"Size does not match at dimension {k} expected index {list(index.shape)} "
                               f"to be smaller than self {list(input.shape)} apart from dimension {d}")
    return I.gather(input, index, dim=d)


def take_along_dim(input, indices, dim=None):
    """``gather`` after broadcasting ``input`` and ``indices`` against each other outside
    ``dim`` (on the flattened input when ``dim`` is None)."""
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    d = wrap_dim(dim, input.ndim)
    shape_in, shape_ix = list(input.shape), list(indices.shape)
    shape_in[d] = shape_ix[d] = 1
    common = list(broadcast_shapes(shape_in, shape_ix))
    input = input.expand(common[:d] + [input.shape[d]] + common[d + 1:])
    indices = indices.expand(common[:d] + [indices.shape[d]] + common[d + 1:])
    return gather(input, d, indices)


def _scatter_args(input, dim, index, src, value):
    d = _check_index(input, dim, index, "scatter")
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter() needs 'src' or 'value'")
    _same_dtype(input, src, _SCATTER_DTYPES)
    return d, src


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    if reduce is not None:
        return _scatter_reduced(input, dim, index, src, value, reduce)
    d, src = _scatter_args(input, dim, index, src, value)
    return I.scatter(input, index, src, dim=d)


def scatter_(input, dim, index, src=None, *, value=None, reduce=None):
    if reduce is not None:  # (a backward through the copy reaches scatter's node, which refuses)
        return input.copy_(_scatter_reduced(input, dim, index, src, value, reduce))
    d, src = _scatter_args(input, dim, index, src, value)
    return apply_inplace(I.scatter, (input, index, src), {"dim": d})


_SCATTER_REDUCES = {"add": "sum", "multiply": "prod"}


def _scatter_reduced(input, dim, index, src, value, reduce):
    """PyTorch's older ``scatter(..., reduce="add" | "multiply")``: ``scatter_reduce`` with
    ``input`` included, and, as in PyTorch, no derivative (a backward through it raises);
    a Tensor ``src`` warns that the argument is deprecated."""
    from .no_derivative import not_implemented
    from .scatter_reduce import scatter_reduce
    if reduce not in _SCATTER_REDUCES:
        raise RuntimeError("reduce argument must be either add or multiply.")
    given = src if src is not None else value
    if isinstance(given, Tensor):
        warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in a "
                      "future PyTorch release. Use torch.scatter_reduce instead for more reduction options.",
                      UserWarning, stacklevel=3)
    d, given = _scatter_args(input, dim, index, src, value)
    if not isinstance(given, Tensor):
        given = index.new_full(tuple(index.shape), given, dtype=input.dtype)
    with grad_mode.no_grad():
        out = scatter_reduce(input.detach(), d, index, given.detach(), _SCATTER_REDUCES[reduce])
    return not_implemented("scatter", [out], [input, given])[0]


def scatter_add(input, dim, index, src):
    d = _check_index(input, dim, index, "scatter_add")
    _same_dtype(input, src, _SCATTER_DTYPES)
    return I.scatter_add(input, index, src, dim=d)


def scatter_add_(input, dim, index, src):
    d = _check_index(input, dim, index, "scatter_add")
    _same_dtype(input, src, _SCATTER_DTYPES)
    return apply_inplace(I.scatter_add, (input, index, src), {"dim": d})


def _mask_check(mask, value=None):
    """PyTorch's refusals: a mask that is not boolean (named by its C type, as PyTorch
    does), a value tensor of more than zero dims."""
    tensor = isinstance(mask, Tensor) or getattr(mask, "is_traced_tensor", False)  # (a tracer)
    if not tensor or mask.dtype.name != "bool":
        from .out import _C_NAMES
        kind = _C_NAMES.get(mask.dtype.name, mask.dtype.name) if tensor else type(mask).__name__
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {kind}")
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.ndim} dimension(s).")


def masked_fill(input, mask, value):
    _mask_check(mask, value)
    return I.masked_fill(input, mask, value)


def masked_fill_(input, mask, value):
    _mask_check(mask, value)
    return apply_inplace(I.masked_fill, (input, mask, value), {})


def masked_select(input, mask):
    _mask_check(mask)
    from .shape import broadcast_tensors
    if _per_sample(mask):  # (each sample's own mask: results of different sizes)
        raise RuntimeError("vmap: masked_select (and x[mask]) with a mask batched by vmap is not supported: "
                           "its result has a different size for each sample. Use torch.where(mask, x, 0) "
                           "instead")
    input, mask = broadcast_tensors(input, mask)
    return I.advanced_index(input, mask._data, index=(I.ARRAY,))


def nonzero(input, *, as_tuple=False):
    idx = I.nonzero(input)
    if not as_tuple:
        return idx
    if input.ndim == 0:  # (as a one-element vector: index 0 when nonzero, as in PyTorch)
        from ..runtime.creation import zeros
        return (zeros(idx.shape[0], dtype=idx.dtype, device=idx.device),)
    return tuple(idx[:, k] for k in range(input.ndim))


def argwhere(input):
    return nonzero(input)


def narrow(input, dim, start, length):
    d = wrap_dim(dim, input.ndim)
    start = scalar(start)
    if start < 0:
        start += input.shape[d]
    if not 0 <= start <= input.shape[d] - length:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({input.shape[d]}).")
    return I.basic_index(input, index=(slice(None),) * d + (slice(start, start + length),))


def select(input, dim, index):
    d = wrap_dim(dim, input.ndim)
    size = input.shape[d]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input.shape)} "
                         f"at dimension {d}")
    return I.basic_index(input, index=(slice(None),) * d + (index,))


FUNCTIONS = {n: globals()[n] for n in (
    "index_put", "index_put_", "index_select", "gather", "take_along_dim", "scatter",
    "scatter_add", "masked_fill", "masked_select", "nonzero", "argwhere", "narrow", "select")}
METHODS = dict(FUNCTIONS)
METHODS.update(__getitem__=getitem, __setitem__=setitem, scatter_=scatter_,
               scatter_add_=scatter_add_, masked_fill_=masked_fill_)
