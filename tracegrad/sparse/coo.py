"""The sparse COO layout: a tensor stored as coordinates (``indices``, sparse_dim x nnz, int64)
plus one value (or one dense block) per stored entry (``values``, nnz x dense dims).

A :class:`SparseCooTensor` is a :class:`~tracegrad.runtime.tensor.Tensor` (``isinstance``
and ``is_tensor`` hold, and it wins Python's reflected-operator dispatch against dense
Tensors), but it never sets the dense Tensor's slots: any code path written for dense
tensors that reaches for ``_data`` (or the autograd slots) lands in :meth:`__getattr__`,
which refuses with PyTorch's "Could not run 'aten::<op>' ... 'SparseCPU' backend" error
naming the operation, so a sparse tensor can never be read as a dense one by mistake.

Autograd lives in the values tensor: a sparse tensor made from values that require grad
(or a leaf made with ``requires_grad=True``) records every differentiable sparse op on its
values, whose gradients are per stored entry; a leaf's ``.grad`` is rebuilt from them in
PyTorch's layout (sparse, coalesced coordinates).
"""
import sys

from .. import backend
from ..backend import dtypes as _dt
from ..ops.compat_tensor import layout
from ..runtime import formatting
from ..runtime.tensor import DATA_SLOTS, Size, Tensor, wrap

__all__ = ["SparseCooTensor", "refuse", "sparse_coo", "sparse_coo_tensor", "to_sparse"]

sparse_coo = layout("sparse_coo")
_TG_DIR = __file__.rsplit("/", 2)[0]  # the tracegrad package directory
_HERE = __file__.rsplit("/", 1)[0]


_GENERIC = {"op", "f", "fn", "wrapper", "with_out", "method", "inner", "unwrap", "apply", "_eager", "__call__"}


def _calling_op():
    """The name of the operation being attempted, for error messages: the primitive being
    applied (``exp``, ``mean``), else the outermost tracegrad function on the stack."""
    from ..rules.core import Primitive
    name, frame = None, sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.startswith(_TG_DIR) and not frame.f_code.co_filename.startswith(_HERE):
            local = frame.f_locals
            for key in ("self", "prim"):
                if isinstance(local.get(key), Primitive):
                    return local[key].name
            if frame.f_code.co_name not in _GENERIC:
                name = frame.f_code.co_name
        frame = frame.f_back
    return (name or "unknown").strip("_")


def refuse(op):
    """PyTorch's error for an operator without a sparse kernel (NotImplementedError)."""
    return NotImplementedError(
        f"Could not run 'aten::{op}' with arguments from the 'SparseCPU' backend. tracegrad's sparse "
        "COO layout implements only construction, conversion (to_dense, coalesce), mm/spmm/matmul/addmm, "
        "add, mul, the methods of the unary functions that keep zeros (s.abs(), s.sqrt(), s.pow(p)...), "
        "softmax/log_softmax, index_select, sparse_mask and sum; call .to_dense() first for any other operation.")


def _cast(dtype):
    def method(self, memory_format=None):
        return self.to(dtype)
    return method


class SparseCooTensor(Tensor):
    """A tensor in the sparse COO layout (see the module docstring)."""

    __slots__ = ("_coalesced", "_ind", "_size", "_val")

    def __getattr__(self, name):
        if name in DATA_SLOTS:  # a dense code path reached for the dense storage
            raise refuse(_calling_op())
        raise AttributeError(f"'Tensor' object has no attribute '{name}'")

    # -- layout and metadata ---------------------------------------------------------------
    is_sparse = True
    is_sparse_csr = False
    layout = sparse_coo
    is_mkldnn = False
    is_quantized = False
    is_meta = False

    @property
    def shape(self):
        return Size(self._size)

    def size(self, dim=None):
        if dim is None:
            return Size(self._size)
        from ..runtime.tensor import wrap_dim
        return self._size[wrap_dim(dim, len(self._size))]

    @property
    def dtype(self):
        return self._val.dtype

    @property
    def device(self):
        return self._val.device

    @property
    def is_cuda(self):
        return self._val.is_cuda

    @property
    def ndim(self):
        return len(self._size)

    def dim(self):
        return len(self._size)

    def numel(self):
        return Size(self._size).numel()

    nelement = numel

    def __len__(self):
        if not self._size:
            raise TypeError("len() of a 0-d tensor")
        return self._size[0]

    def is_floating_point(self):
        return self._val.is_floating_point()

    def is_complex(self):
        return self._val.is_complex()

    def element_size(self):
        return self._val.element_size()

    def _nnz(self):
        return self._ind.shape[1]

    def sparse_dim(self):
        return self._ind.shape[0]

    def dense_dim(self):
        return len(self._size) - self._ind.shape[0]

    def is_coalesced(self):
        return self._coalesced

    def _indices(self):
        return self._ind

    def _values(self):
        return self._val

    def indices(self):
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._ind

    def values(self):
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._val

    # -- autograd (kept by the values tensor) -----------------------------------------------
    @property
    def requires_grad(self):
        return self._val.requires_grad

    @requires_grad.setter
    def requires_grad(self, flag):
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad=True):
        self._val.requires_grad_(requires_grad)
        return self

    @property
    def grad_fn(self):
        return self._val.grad_fn

    @property
    def is_leaf(self):
        return self._val.is_leaf

    @property
    def grad(self):
        """The gradient in PyTorch's layout: sparse, at the coalesced coordinates. Each
        stored entry's value gradient is the gradient at its coordinates, so a repeated
        coordinate reads it from its first entry (summing them would count it twice)."""
        g = self._val.grad
        if g is None:
            return None
        lin, unique, first, _ = _linear_unique(self)
        xp = backend.namespace_of(lin)
        indices = _unravel(xp, unique, self._size[:self.sparse_dim()])
        return _make(indices, g[wrap(first.astype(xp.int64))], self._size, False)

    @grad.setter
    def grad(self, value):
        if value is not None:
            raise RuntimeError("tracegrad: assigning .grad of a sparse tensor is only supported with None")
        self._val.grad = None

    @property
    def data(self):
        return self.detach()

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False, **unused):
        """An all-zero sparse tensor (no stored entries), as PyTorch's ``new_zeros`` and
        ``new_empty`` of a sparse tensor give."""
        size = size[0] if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
        return empty_sparse(size, dtype or self.dtype, device or self.device, len(size), requires_grad)

    new_empty = new_zeros

    def new_ones(self, *args, **kwargs):
        raise refuse("fill_.Scalar")

    new_full = new_ones

    def detach(self):
        return _make(self._ind, self._val.detach(), self._size, self._coalesced)

    def clone(self, *, memory_format=None):
        return _make(self._ind.clone(), self._val.clone(), self._size, self._coalesced)

    # -- conversions -----------------------------------------------------------------------
    def to(self, *args, **kwargs):
        """Values moved/cast as ``Tensor.to`` would (the coordinates follow the device)."""
        val = self._val.to(*args, **kwargs)
        if val is self._val:
            return self
        return _make(self._ind.to(val.device), val, self._size, self._coalesced)

    float, double, half, long, int, bool, short = map(_cast, (
        _dt.float32, _dt.float64, _dt.float16, _dt.int64, _dt.int32, _dt.bool_, _dt.int16))

    def cpu(self, memory_format=None):
        return self.to("cpu")

    def cuda(self, device=None, non_blocking=False, memory_format=None):
        return self.to("cuda" if device is None else device)

    def type(self, dtype=None):
        if dtype is None:
            return f"tracegrad.sparse.{self.dtype._legacy}"
        return self.to(dtype)

    def numpy(self, *, force=False):
        raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() first.")

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        _check_layout(layout, blocksize, dense_dim)
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            raise NotImplementedError("tracegrad: to_sparse(sparse_dim) of a sparse tensor with another "
                                      "sparse_dim is not supported; call .to_dense() first")
        return self

    def to_dense(self, dtype=None, *, masked_grad=None):
        """The dense tensor (repeated coordinates summed); differentiable w.r.t. the values."""
        from ..runtime.creation import zeros
        sd = self.sparse_dim()
        dense_shape = self._size[sd:]
        cells = Size(self._size[:sd]).numel()
        flat = zeros((cells,) + dense_shape, dtype=self.dtype, device=self.device)
        lin = wrap(_linear(self))
        out = flat.index_add(0, lin, self._val).reshape(self._size)
        return out if dtype is None else out.to(dtype)

    def coalesce(self):
        """Coordinates sorted and unique, repeated ones summed (differentiable)."""
        if self._coalesced:
            return self
        from ..runtime.creation import zeros
        lin, unique, _, inverse = _linear_unique(self)
        xp = backend.namespace_of(lin)
        values = zeros((len(unique),) + tuple(self._val.shape[1:]), dtype=self.dtype, device=self.device)
        values = values.index_add(0, wrap(inverse.astype(xp.int64)), self._val)
        return _make(_unravel(xp, unique, self._size[:self.sparse_dim()]), values, self._size, True)

    def __repr__(self):
        return _repr(self)

    __str__ = __repr__

    def __format__(self, spec):
        return repr(self) if not spec else format(repr(self), spec)

    def __bool__(self):
        raise refuse("is_nonzero")

    def __iter__(self):
        raise refuse("unbind")

    def __reduce_ex__(self, protocol):
        return (_rebuild, (self._ind.detach(), self._val.detach(), self._size, self._coalesced))

    def __deepcopy__(self, memo):
        return _make(self._ind.clone(), self._val.detach().clone().requires_grad_(self._val.requires_grad),
                     self._size, self._coalesced)


def empty_sparse(size, dtype, device, sparse_dim, requires_grad=False):
    """A sparse tensor of ``size`` with no stored entries."""
    from ..runtime.creation import zeros
    size = tuple(int(n) for n in size)
    values = zeros((0,) + size[sparse_dim:], dtype=dtype, device=device)
    indices = zeros((sparse_dim, 0), dtype=_dt.int64, device=device)
    return _make(indices, values.requires_grad_() if requires_grad else values, size, True)


def _rebuild(indices, values, size, coalesced):
    return _make(indices, values, tuple(size), coalesced)


def _make(indices, values, size, coalesced):
    t = object.__new__(SparseCooTensor)
    t._ind = indices
    t._val = values
    t._size = tuple(int(s) for s in size)
    t._coalesced = bool(coalesced)
    t._vc = None  # (its own version counter: save_for_backward and ._version read it)
    return t


def _linear(s):
    """Each stored entry's row-major position among the sparse dimensions (a backend array)."""
    ind = s._ind._data
    xp = backend.namespace_of(ind)
    lin = xp.zeros(ind.shape[1], dtype=xp.int64)
    for d, n in enumerate(s._size[:ind.shape[0]]):
        lin = lin * n + ind[d]
    return lin


def _linear_unique(s):
    """(positions, the sorted unique ones, each one's first entry, each entry's rank)."""
    lin = _linear(s)
    unique, first, inverse = backend.namespace_of(lin).unique(lin, return_index=True, return_inverse=True)
    return lin, unique, first, inverse.reshape(-1)


def _unravel(xp, positions, sparse_shape):
    """Coordinates (an int64 Tensor, sparse_dim x n) of row-major ``positions``."""
    if not sparse_shape or not len(positions):
        return wrap(xp.zeros((len(sparse_shape), len(positions)), dtype=xp.int64))
    return wrap(xp.stack(xp.unravel_index(positions, sparse_shape)).astype(xp.int64))


def _check_layout(layout_, blocksize, dense_dim):
    if layout_ not in (None, sparse_coo) or blocksize is not None or dense_dim is not None:
        raise NotImplementedError(f"tracegrad: to_sparse supports only layout=tracegrad.sparse_coo "
                                  f"(got layout={layout_}, blocksize={blocksize}, dense_dim={dense_dim})")


# -- construction --------------------------------------------------------------------------------

def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """A sparse COO tensor with ``values[e]`` at coordinates ``indices[:, e]`` (repeats are
    summed when coalesced). The coordinates are always checked against ``size``: an
    out-of-range index is refused rather than read out of bounds."""
    from ..runtime.creation import as_tensor, tensor
    ind = as_tensor(indices, device=device)
    val = values if isinstance(values, Tensor) else tensor(values, device=device)
    if isinstance(val, SparseCooTensor) or isinstance(ind, SparseCooTensor):
        raise TypeError("sparse_coo_tensor(): indices and values must be dense tensors")
    if dtype is not None or device is not None:
        val = val.to(device=device, dtype=dtype)
    ind = ind.detach().to(dtype=_dt.int64, device=val.device)
    if ind.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(ind.shape)}")
    sd, nnz = ind.shape
    if val.ndim == 0 or val.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, "
                           f"nnz from values: {val.shape[0] if val.ndim else 1}")
    arr = ind._data
    xp = backend.namespace_of(arr)
    if size is None:
        size = tuple(int(m) + 1 for m in arr.max(axis=1)) if nnz else (0,) * sd
        size = size + tuple(val.shape[1:])
    size = tuple(int(s) for s in size)
    if len(size) != sd + val.ndim - 1:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
                           f"sparse_dim = {sd}, dense_dim = {val.ndim - 1}")
    if tuple(val.shape[1:]) != size[sd:]:
        raise RuntimeError(f"values has incorrect size, expected {[nnz, *size[sd:]]}, got {list(val.shape)}")
    if nnz:
        low, high = arr.min(axis=1), arr.max(axis=1)
        for d in range(sd):
            if int(low[d]) < 0:
                raise RuntimeError(f"found negative index {int(low[d])} for dim {d}")
            if int(high[d]) >= size[d]:
                raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {size[d]} "
                                   f"but found index {int(high[d])}")
    if requires_grad:
        val = val.detach().requires_grad_()
    elif val.requires_grad:  # made from values with a history: a non-leaf, as in PyTorch
        val = val.view(val.shape)
    s = _make(ind, val, size, nnz <= 1)  # (one entry or none: coalesced, as in PyTorch)
    if is_coalesced:  # checked, not trusted (PyTorch trusts it unless check_invariants)
        lin = _linear(s)
        if nnz > 1 and not bool(xp.all(lin[1:] > lin[:-1])):
            raise RuntimeError("cannot set is_coalesced to true if indices correspond to uncoalesced COO tensor")
    if is_coalesced is not None:
        s._coalesced = bool(is_coalesced)
    return s


def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """``Tensor.to_sparse``: the nonzero entries (or, with ``sparse_dim``, the nonzero
    blocks over the first ``sparse_dim`` dimensions) in the COO layout, coalesced;
    differentiable w.r.t. the dense tensor."""
    _check_layout(layout, blocksize, dense_dim)
    sd = self.ndim if sparse_dim is None else int(sparse_dim)
    if not 0 <= sd <= self.ndim:
        raise RuntimeError(f"sparse_dim must be in [0, {self.ndim}], but got {sd}")  # ponder: torch's text
    data = self._data
    xp = backend.namespace_of(data)
    nonzero = data != 0
    if sd < self.ndim:
        nonzero = nonzero.any(axis=tuple(range(sd, self.ndim)))
    if sd == 0:
        return _make(wrap(xp.zeros((0, 1), dtype=xp.int64)), self.unsqueeze(0), self.shape, True)
    coords = xp.nonzero(nonzero)
    indices = wrap(xp.stack(coords).astype(xp.int64) if coords[0].size
                   else xp.zeros((sd, 0), dtype=xp.int64))
    values = self[tuple(wrap(c.astype(xp.int64)) for c in coords)]
    return _make(indices, values, self.shape, True)


# -- printing ------------------------------------------------------------------------------------

def _body(t, indent):
    """``tensor(``'s contents for a dense part printed inside the sparse repr (no dtype)."""
    d = t.dtype
    data = backend.namespace_of(t._data).to_host(t._data)
    text = formatting.format_values(data, is_float=d.is_floating_point, is_complex=d.is_complex,
                                    is_bool=d is _dt.bool_, indent=indent)
    return text + (f", size={tuple(data.shape)}" if data.size == 0 else "")


def _repr(s):
    """PyTorch's form: ``tensor(indices=tensor(...),\\n       values=tensor(...),\\n
    size=(..), nnz=.., layout=tracegrad.sparse_coo)``."""
    indent = len("tensor(")
    text = ("tensor(indices=tensor(" + _body(s._ind.detach(), indent + len("indices=tensor(")) + "),\n"
            + " " * indent + "values=tensor(" + _body(s._val.detach(), indent + len("values=tensor(")) + ")")
    suffixes = []
    if s.device.type != "cpu":
        suffixes.append(f"device='{s.device}'")
    suffixes += [f"size={tuple(s._size)}", f"nnz={s._nnz()}"]
    default = _dt.get_default_dtype()
    if s.dtype not in (default, _dt.int64, _dt.bool_, _dt.complex128 if default is _dt.float64 else _dt.complex64):
        suffixes.append(f"dtype=tracegrad.{s.dtype.name}")
    suffixes.append("layout=tracegrad.sparse_coo")
    fn = s.grad_fn
    if fn is not None:
        suffixes.append(f"grad_fn=<{type(fn).__name__}>")
    elif s.requires_grad:
        suffixes.append("requires_grad=True")
    linewidth = formatting.get_printoptions()["linewidth"]
    parts, last = [text], len(text) - text.rfind("\n") + 1
    for k, suffix in enumerate(suffixes):  # PyTorch: the first suffix of a sparse tensor on a new line
        size = len(suffix.replace("=tracegrad.", "=torch."))
        if k == 0 or last + size + 2 > linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last = indent + size
        else:
            parts.append(", " + suffix)
            last += size + 2
    return "".join(parts) + ")"
