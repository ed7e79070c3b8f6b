"""Shape functions with PyTorch's signatures: view/reshape (with ``-1`` and PyTorch's
view-compatibility rule), squeeze, transpose, expand, cat, split, chunk, ..."""
import functools
import math

from ..backend import dtypes as _dt
from ..rules import broadcast as B
from ..rules import memory as M
from ..rules import shape as S
from ..runtime.shapes import broadcast_shapes, expand_shape
from ..runtime.tensor import Size, wrap
from ..runtime.viewpath import view_op
from ._args import per_sample, shape_args, wrap_dim


def infer_shape(shape, numel):
    """Resolve one ``-1`` in ``shape`` against ``numel``, with PyTorch's errors."""
    shape = tuple(shape)
    if -1 not in shape and (not shape or min(shape) >= 0):  # (the common case, in C)
        if math.prod(shape) != numel:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        return shape
    unknown = []
    for i, s in enumerate(shape):
        if s == -1:
            unknown.append(i)
        elif s < 0:
            raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape {list(shape)}")
    if len(unknown) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = math.prod(s for s in shape if s != -1)
    if known == 0:
        if numel == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {list(shape)} because the "
                               "unspecified dimension size -1 can be any value and is ambiguous")
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    if numel % known:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape[:unknown[0]] + (numel // known,) + shape[unknown[0] + 1:]


def _view_shape(shape, numel):
    """``infer_shape(shape_args(shape), numel)``: a view's size arguments, resolved. Sizes
    that are ints (inline or in one tuple) and were resolved before for the same ``numel``
    are found in a table (a tuple of ints equals no other tuple of ints)."""
    if len(shape) == 1 and type(shape[0]) in _SEQUENCES:
        shape = shape[0]
    if not _INTS.issuperset(map(type, shape)):
        return infer_shape(shape_args(shape), numel)
    return _resolved(tuple(shape), numel)


# (sizes of ints, numel) -> the resolved shape: a bounded table (an error is not kept)
_resolved = functools.lru_cache(maxsize=512)(infer_shape)
_SEQUENCES = (tuple, list, Size)
_INTS = frozenset((int,))


def view_strides(old_shape, old_strides, new_shape):
    """Strides that let ``new_shape`` alias storage laid out as (old_shape, old_strides),
    or None when no view can (PyTorch's rule: each run of merged dims must be contiguous)."""
    if math.prod(old_shape) == 0:
        return ()
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base = old_strides[-1] if old_strides else 1
    tensor_numel = 1
    view_numel = 1
    for d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[d]
        if d == 0 or (old_shape[d - 1] != 1 and old_strides[d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base = old_strides[d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)


def _viewable(input, shape):
    """Whether ``input``'s layout lets ``shape`` (of its size) alias it: always when it is
    contiguous, else by PyTorch's rule (view_strides), remembered per layout and shape."""
    return input.is_contiguous() or _strided_viewable(tuple(input.shape), input.stride(), shape)


@functools.lru_cache(maxsize=512)
def _strided_viewable(shape, strides, new_shape):
    """Whether a layout of ``shape`` and ``strides`` can be viewed as ``new_shape`` (a
    bounded table: the same layouts recur call after call)."""
    return view_strides(shape, strides, new_shape) is not None


def _keyword_form(given, keyword, fn, name):
    """A size argument given as ``f(2, 3)`` / ``f((2, 3))``, or as the keyword ``name=``
    (``x.reshape(shape=(2, 3))``, as PyTorch's methods also take it): one form only."""
    if keyword is None:
        return given
    if given:
        raise TypeError(f"{fn}() got multiple values for argument '{name}'")
    return (keyword,)


def view(input, *shape, size=None):
    if size is not None:
        shape = _keyword_form(shape, size, "view", "size")
    elif len(shape) == 1 and isinstance(shape[0], _dt.dtype):
        return _view_as_dtype(input, shape[0])
    shape = _view_shape(shape, input.numel())
    if not _viewable(input, shape):
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.")
    return view_op(S.reshape, input, {"shape": shape})


def _view_as_dtype(input, dtype):
    """``Tensor.view(dtype)``: the same memory read as ``dtype``, with PyTorch's checks. A
    new element size scales the last dim (which must be contiguous). As in PyTorch the
    result shares the version counter but records no gradient: the bits reinterpreted are
    not a differentiable function of the values."""
    if per_sample(input):
        raise NotImplementedError("vmap: view(dtype) of a batched tensor is not supported in tracegrad")
    a, old = input._data, input.dtype
    ratio_of = f"to view {old.scalar_name} as {dtype.scalar_name} (different element sizes)"
    small, large = sorted((old.itemsize, dtype.itemsize))
    if small != large and a.size == 0:  # (an empty array's strides are 0: only the sizes matter)
        shape = list(a.shape) or [0]
        if dtype.itemsize > old.itemsize and shape[-1] % (large // small):
            raise RuntimeError(f"self.size(-1) must be divisible by {large // small} {ratio_of}, but got {shape[-1]}")
        shape[-1] = shape[-1] * old.itemsize // dtype.itemsize
        return wrap(a.reshape(-1).view(dtype.np).reshape(shape))
    if small != large:
        ratio = large // small
        if a.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {ratio_of}")
        if a.shape[-1] != 1 and a.strides[-1] != old.itemsize:
            raise RuntimeError(f"self.stride(-1) must be 1 {ratio_of}, but got {input.stride()[-1]}")
        if dtype.itemsize > old.itemsize:
            if a.shape[-1] % ratio:
                raise RuntimeError(f"self.size(-1) must be divisible by {ratio} {ratio_of}, but got {a.shape[-1]}")
            if input.storage_offset() % ratio:
                raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} {ratio_of}, but got "
                                   f"{input.storage_offset()}")
            for d, st in enumerate(input.stride()[:-1]):
                if st % ratio:
                    raise RuntimeError(f"self.stride({d}) must be divisible by {ratio} {ratio_of}, but got {st}")
        if a.shape[-1] == 1 and a.strides[-1] != old.itemsize:  # (NumPy wants the last dim contiguous)
            a = a.reshape(a.shape[:-1] + (1,))
    t = wrap(a.view(dtype.np))
    t._vc = input._version_counter()
    return t


def reshape(input, *given, shape=None):
    """A view when the layout allows one, otherwise a copy (as PyTorch's reshape)."""
    if shape is not None:
        given = _keyword_form(given, shape, "reshape", "shape")
    shape = _view_shape(given, input.numel())
    if not _viewable(input, shape):
        return S.unsafe_view(M.clone(input), shape=shape)  # a copy, as in PyTorch
    return view_op(S.reshape, input, {"shape": shape})


def as_strided(input, size, stride, storage_offset=None):
    """PyTorch's ``as_strided``: a view reading ``input``'s storage at ``storage_offset +
    sum_k i_k stride_k`` (default: where ``input`` starts). Positions may repeat; the
    gradient sums over them. Supported where the positions read are ``input``'s own
    elements and ``input`` is contiguous (its storage order is then its element order);
    a strided ``input`` or a read into the rest of its storage is refused, naming it,
    rather than read differently from PyTorch."""
    size, stride = tuple(shape_args((size,))), tuple(shape_args((stride,)))
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    start = input.storage_offset()
    offset = start if storage_offset is None else int(storage_offset)
    if not input.is_contiguous():
        raise NotImplementedError("tracegrad: as_strided of a non-contiguous tensor reads its storage in an order "
                                  "tracegrad does not follow; call .contiguous() first")
    inside = offset >= start and (any(m == 0 for m in size) or offset + sum(
        (m - 1) * st for m, st in zip(size, stride)) < start + input.numel())
    if not inside and (start or input._base is not None):
        raise NotImplementedError("tracegrad: as_strided reading outside the tensor's own elements (into the rest "
                                  "of its storage) is not supported")
    return view_op(S.as_strided, input, {"size": size, "stride": stride, "offset": offset - start})


def as_strided_copy(input, size, stride, storage_offset=None):
    return M.clone(as_strided(input, size, stride, storage_offset))


def view_as(input, other):
    return view(input, other.shape)


def reshape_as(input, other):
    return reshape(input, other.shape)


def flatten(input, start_dim=0, end_dim=-1):
    if input.ndim == 0:
        return reshape(input, (1,))
    s, e = wrap_dim(start_dim, input.ndim), wrap_dim(end_dim, input.ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = tuple(input.shape)
    return reshape(input, shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:])


def unflatten(input, dim, sizes):
    d = wrap_dim(dim, input.ndim)
    shape = tuple(input.shape)
    sizes = infer_shape(sizes, shape[d])
    return view(input, shape[:d] + tuple(sizes) + shape[d + 1:])


def squeeze(input, dim=None):
    if dim is None:
        return view_op(S.squeeze, input, {})
    if isinstance(dim, (tuple, list)):
        return view_op(S.squeeze, input, {"dim": tuple(wrap_dim(d, input.ndim) for d in dim)})
    return view_op(S.squeeze, input, {"dim": wrap_dim(dim, input.ndim)})


def unsqueeze(input, dim):
    return view_op(S.unsqueeze, input, {"dim": wrap_dim(dim, input.ndim + 1)})


def transpose(input, dim0, dim1):
    n = input.ndim
    if type(dim0) is not int or not 0 <= dim0 < n:
        dim0 = wrap_dim(dim0, n)
    if type(dim1) is not int or not 0 <= dim1 < n:
        dim1 = wrap_dim(dim1, n)
    return view_op(S.transpose, input, {"dim0": dim0, "dim1": dim1})


def t(input):
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return view_op(S.t, input, {})


def permute(input, *given, dims=None):
    dims = _keyword_form(given, dims, "permute", "dims")
    dims = tuple(wrap_dim(d, input.ndim) for d in shape_args(dims))
    if sorted(dims) != list(range(input.ndim)):
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not "
                           f"match the length of the desired ordering of dimensions i.e. input.dim() = "
                           f"{input.ndim} is not equal to len(dims) = {len(dims)}" if len(dims) != input.ndim
                           else "permute(): duplicate dims are not allowed.")
    return view_op(S.permute, input, {"dims": dims})


def movedim(input, source, destination):
    src = [wrap_dim(d, input.ndim) for d in (source if isinstance(source, (tuple, list)) else (source,))]
    dst = [wrap_dim(d, input.ndim) for d in (destination if isinstance(destination, (tuple, list)) else (destination,))]
    order = [d for d in range(input.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return view_op(S.permute, input, {"dims": tuple(order)})


def _T(input):
    return view_op(S.permute, input, {"dims": tuple(reversed(range(input.ndim)))})


def _mT(input):
    if input.ndim < 2:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
    return view_op(S.transpose, input, {"dim0": input.ndim - 2, "dim1": input.ndim - 1})


def expand(input, *sizes, size=None):
    sizes = _keyword_form(sizes, size, "expand", "size")
    return view_op(B.broadcast_to, input, {"shape": expand_shape(input.shape, shape_args(sizes), input.type())})


def expand_as(input, other):
    return expand(input, other.shape)


def broadcast_to(input, size):
    return expand(input, size)


def sum_to_size(input, *size):
    """``input`` summed down to ``size`` (a shape ``input`` could be expanded from)."""
    size = shape_args(size)
    try:
        expand_shape(size, input.shape, input.type())
    except RuntimeError:
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(input.shape)}}}.") from None
    return input if tuple(input.shape) == size else B.sum_to(input, shape=size)


def broadcast_tensors(*tensors):
    """The tensors expanded to their common broadcast shape."""
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(expand(t, shape) for t in tensors)


def repeat(input, *sizes, repeats=None):
    sizes = shape_args(_keyword_form(sizes, repeats, "repeat", "repeats"))
    if len(sizes) < input.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of "
                           "dimensions of tensor")
    return S.repeat(input, repeats=sizes)


def flip(input, *given, dims=None):
    """``x.flip(2, 3)`` or ``x.flip((2, 3))`` (or ``dims=``), as PyTorch's method takes either."""
    if not given and dims is None:
        raise TypeError("flip() missing 1 required positional argument: 'dims'")
    dims = shape_args(_keyword_form(given, dims, "flip", "dims"))
    return S.flip(input, dims=tuple(wrap_dim(d, input.ndim) for d in dims))


def fliplr(input):
    return flip(input, (1,))


def flipud(input):
    return flip(input, (0,))


def roll(input, shifts, dims=None):
    if dims is None:
        return view(S.roll(flatten(input), shifts=shifts, dims=0), input.shape)
    if isinstance(shifts, (tuple, list)):
        return S.roll(input, shifts=tuple(shifts), dims=tuple(wrap_dim(d, input.ndim) for d in dims))
    return S.roll(input, shifts=shifts, dims=wrap_dim(dims, input.ndim))


def tril(input, diagonal=0):
    return S.tril(input, diagonal=diagonal)


def triu(input, diagonal=0):
    return S.triu(input, diagonal=diagonal)


def cat(tensors, dim=0):
    tensors = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)] or list(tensors[:1])
    if not tensors:
        raise ValueError("tracegrad.cat(): expected a non-empty list of Tensors")
    d = wrap_dim(dim, tensors[0].ndim)
    ref = tensors[0].shape
    for i, t in enumerate(tensors[1:], 1):
        if t.ndim != len(ref):
            raise RuntimeError(f"Tensors must have same number of dimensions: got {len(ref)} and {t.ndim}")
        for k, (a, b) in enumerate(zip(ref, t.shape)):
            if k != d and a != b:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected "
                                   f"size {a} but got size {b} for tensor number {i} in the list.")
    return S.cat(*tensors, dim=d)


def stack(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shape = tensors[0].shape
    for i, t in enumerate(tensors[1:], 1):
        if t.shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(shape)} at entry 0 and {list(t.shape)} at entry {i}")
    return S.stack(*tensors, dim=wrap_dim(dim, tensors[0].ndim + 1))


def split(tensor, split_size_or_sections=None, dim=0, *, split_size=None):
    """``split_size``: the name Tensor.split's argument has in PyTorch."""
    if (split_size_or_sections is None) == (split_size is None):
        raise TypeError("split() missing required argument 'split_size_or_sections'"
                        if split_size is None else "split() got multiple values for argument 'split_size'")
    if split_size_or_sections is None:
        split_size_or_sections = split_size
    d = wrap_dim(dim, tensor.ndim)
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size <= 0 and n:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
        sizes = ([size] * (n // size) + ([n % size] if n % size else [])) if size and n else [0]
        return view_op(S.split, tensor, {"sizes": tuple(sizes), "dim": d, "chunked": True})
    sizes = tuple(split_size_or_sections)
    if sum(sizes) != n:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's "
                           f"size at dimension {d}), but got split_sizes={list(sizes)}")
    return view_op(S.split, tensor, {"sizes": sizes, "dim": d})


def chunk(input, chunks, dim=0):
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    d = wrap_dim(dim, input.ndim)
    if input.shape[d] == 0:  # (PyTorch: ``chunks`` empty pieces)
        return split(input, [0] * chunks, d)
    return split(input, -(-input.shape[d] // chunks), d)


def unbind(input, dim=0):
    return view_op(S.unbind, input, {"dim": wrap_dim(dim, input.ndim)})


def diagonal(input, offset=0, dim1=0, dim2=1):
    return S.diagonal(input, offset=offset, dim1=wrap_dim(dim1, input.ndim), dim2=wrap_dim(dim2, input.ndim))


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    return S.diagonal_scatter(input, src, offset=offset, dim1=wrap_dim(dim1, input.ndim),
                              dim2=wrap_dim(dim2, input.ndim))


def clone(input, *, memory_format=None):
    return M.clone(input)


def contiguous(input, memory_format=None):
    return input if input.is_contiguous() else M.clone(input)


# -- in-place shape changes (x.unsqueeze_(0)): the tensor itself takes the view's shape ---------

def _restrides_in_place(view_op, name):
    """``x.<name>()``: x becomes ``view_op(x)``'s view of the same memory, as in PyTorch.

    Only for tensors outside autograd: PyTorch records a view node into the tensor's own
    history there, which tracegrad does not do, so it refuses rather than lose gradients."""
    def method(self, *args, **kwargs):
        if self.requires_grad:
            raise RuntimeError(f"{name}(): changing the shape of a tensor that requires grad in "
                               f"place is not supported by tracegrad; use {name[:-1]}() instead")
        viewed = view_op(self, *args, **kwargs)
        if per_sample(self):  # under vmap: the whole batch takes the view (_data is one sample)
            self._phys = viewed._phys
        self._data = viewed._data
        self._bump_version()  # (an in-place op, as PyTorch counts it)
        return self
    method.__name__ = name
    return method


_IN_PLACE_VIEWS = {n + "_": _restrides_in_place(globals()[n], n + "_")
                   for n in ("squeeze", "unsqueeze", "transpose", "t")}
_IN_PLACE_VIEWS.update(swapaxes_=_IN_PLACE_VIEWS["transpose_"], swapdims_=_IN_PLACE_VIEWS["transpose_"])


FUNCTIONS = {n: globals()[n] for n in (
    "reshape", "flatten", "unflatten", "squeeze", "unsqueeze", "transpose", "t", "permute",
    "movedim", "broadcast_to", "broadcast_tensors", "broadcast_shapes", "flip", "fliplr",
    "flipud", "roll", "tril", "triu", "cat", "stack", "split", "chunk",
    "unbind", "diagonal", "diagonal_scatter", "clone", "as_strided", "as_strided_copy")}
FUNCTIONS.update(concat=cat, concatenate=cat, swapaxes=transpose, swapdims=transpose,
                 moveaxis=movedim)
METHODS = {n: globals()[n] for n in (
    "view", "reshape", "view_as", "reshape_as", "as_strided", "flatten", "unflatten", "squeeze", "unsqueeze",
    "transpose", "t", "permute", "movedim", "expand", "expand_as", "broadcast_to", "repeat",
    "flip", "fliplr", "flipud", "roll", "tril", "triu", "split", "chunk", "unbind", "diagonal",
    "clone", "contiguous", "sum_to_size")}
METHODS.update(_IN_PLACE_VIEWS)
METHODS.update(swapaxes=transpose, swapdims=transpose, moveaxis=movedim,
               T=property(_T), mT=property(_mT))
