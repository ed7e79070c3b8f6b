"""Arithmetic on sparse COO tensors: products (the ``sparse_mm`` rule), sums, additions and
scaling, with PyTorch's result layouts, and the sparse-aware front doors (``tracegrad.mm``,
``matmul``, ``add``, ``sum``...) that send a sparse operand here.

Gradients flow through the values tensor. Where PyTorch gives a sparse *leaf* a dense
(strided) gradient (``torch.mm``, ``@``, ``dense + sparse``, a full ``sum``), tracegrad
cannot hold it in the leaf's layout and refuses instead of changing the layout silently;
``torch.sparse.mm`` (a sparse gradient) is the supported way to train a sparse leaf.
"""
import numbers

from .. import backend
from ..rules.sparse import sparse_mm
from ..runtime import grad_mode
from ..runtime.tensor import Tensor, wrap
from .coo import SparseCooTensor, _make, refuse

__all__ = ["add", "install", "matmul", "mm", "sparse_mm_", "spmm", "sum"]


def _is_sparse(x):
    return type(x) is SparseCooTensor


def _no_dense_leaf_grad(s, op):
    """Refuse an op for which PyTorch would give sparse leaf ``s`` a dense gradient."""
    if grad_mode.is_grad_enabled() and s.requires_grad and s.is_leaf:
        raise NotImplementedError(
            f"tracegrad: {op} with a sparse leaf tensor that requires grad: PyTorch gives that leaf a "
            "dense (strided) gradient, which tracegrad's sparse tensors cannot hold. Use "
            "torch.sparse.mm (sparse gradient) or make the sparse tensor from values that require grad.")


def _matrix(s, op):
    if s.ndim != 2 or s.dense_dim() != 0:
        raise NotImplementedError(f"tracegrad: {op} supports 2-D sparse matrices without dense "
                                  f"dimensions (got size {tuple(s.shape)}, dense_dim={s.dense_dim()})")
    return s._ind[0], s._ind[1], s._val


def _check_dtypes(a, b):
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {a.dtype._legacy[:-6]} but found {b.dtype._legacy[:-6]}")


def _sparse_times_dense(s, dense, op):
    """``s @ dense`` for a 2-D sparse ``s`` and a 1-D or 2-D dense tensor: dense result."""
    if _is_sparse(dense):
        raise refuse(op)
    rows, cols, values = _matrix(s, op)
    if dense.ndim not in (1, 2):
        raise RuntimeError(f"{op}: expected a 1-D or 2-D dense operand, got {dense.ndim}-D")
    if dense.shape[0] != s.shape[1]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {s.shape[1]}, got {dense.shape[0]}")
    _check_dtypes(s, dense)
    return sparse_mm(rows, cols, values, dense, nrows=s.shape[0])


def _dense_times_sparse(dense, s, op):
    """``dense @ s`` = ``(s^T @ dense^T)^T``: dense result."""
    rows, cols, values = _matrix(s, op)
    if dense.ndim != 2:
        raise NotImplementedError(f"tracegrad: {op} of a {dense.ndim}-D dense tensor and a sparse matrix")
    if dense.shape[1] != s.shape[0]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {s.shape[0]}, got {dense.shape[1]}")
    _check_dtypes(s, dense)
    return sparse_mm(cols, rows, values, dense.t(), nrows=s.shape[1]).t()


def _sparse_times_sparse(a, b, op):
    """``a @ b`` of two sparse matrices: sparse, stored where the structures meet (as
    PyTorch stores them, zeros by cancellation included), coalesced."""
    rows, cols, _ = _matrix(a, op)
    _matrix(b, op)
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and "
                           f"{b.shape[0]}x{b.shape[1]})")
    _check_dtypes(a, b)
    xp = backend.namespace_of(rows._data)
    pattern = _make(b._ind, wrap(xp.ones(b._nnz())), b.shape, False).to_dense()
    hits = sparse_mm(rows._data, cols._data, xp.ones(a._nnz()), pattern._data, nrows=a.shape[0])
    coords = xp.nonzero(hits)
    product = _sparse_times_dense(a, b.to_dense(), op)
    values = product[tuple(wrap(c.astype(xp.int64)) for c in coords)]
    return _make(wrap(xp.stack(coords).astype(xp.int64)), values, (a.shape[0], b.shape[1]), True)


def _product(a, b, op, leaf_check=True):
    if _is_sparse(a) and _is_sparse(b):  # a sparse result: sparse leaf gradients too
        return _sparse_times_sparse(a, b, op)
    if _is_sparse(a):
        if leaf_check:
            _no_dense_leaf_grad(a, op)
        return _sparse_times_dense(a, b, op)
    if leaf_check:
        _no_dense_leaf_grad(b, op)
    return _dense_times_sparse(a, b, op)


def mm(input, mat2):
    """``torch.mm`` with a sparse operand (either side)."""
    if _is_sparse(input) and not _is_sparse(mat2) and mat2.ndim != 2:
        raise RuntimeError(f"mm: mat2 must be a matrix, got {mat2.ndim}-D tensor")
    return _product(input, mat2, "mm")


spmm = mm


def sparse_mm_(mat1, mat2):
    """``torch.sparse.mm``: as mm, but a sparse leaf gets a sparse gradient (supported)."""
    if not _is_sparse(mat1):
        raise refuse("_sparse_mm")
    return _product(mat1, mat2, "sparse.mm", leaf_check=False)


def matmul(input, other):
    return _product(input, other, "matmul")


# -- sums and additions --------------------------------------------------------------------------

def sum(input, dim=None, keepdim=False, *, dtype=None):
    """A full sum is a dense 0-d tensor; a sum over some dimensions stays sparse over the
    sparse dimensions that remain (coalesced), as in PyTorch."""
    values = input._val if dtype is None else input._val.to(dtype)
    if dim is None:
        _no_dense_leaf_grad(input, "sum")
        return values.sum()
    dims = sorted({d % input.ndim for d in ((dim,) if isinstance(dim, int) else dim)})
    sd = input.sparse_dim()
    value_dims = tuple(d - sd + 1 for d in dims if d >= sd)
    if value_dims:
        values = values.sum(dim=value_dims, keepdim=keepdim)
    summed = [d for d in dims if d < sd]
    if len(summed) == sd and not keepdim:
        return values.sum(0)  # no sparse dimension left: dense
    kept = [d for d in range(sd) if d not in summed or keepdim]
    ind = input._ind._data
    xp = backend.namespace_of(ind)
    new_ind = ind[kept]
    if keepdim:
        new_ind = xp.where(xp.isin(xp.asarray(kept), xp.asarray(summed))[:, None], 0, new_ind)
    size = tuple(1 if d in dims else n for d, n in enumerate(input.shape)) if keepdim else tuple(
        n for d, n in enumerate(input.shape) if d not in dims)
    summed = _make(wrap(new_ind), values, size, False).coalesce()
    summed._coalesced = not keepdim  # (PyTorch does not flag a keepdim sum coalesced)
    return summed


def add(input, other, *, alpha=1):
    """dense + sparse is dense; sparse + sparse is sparse (merged when both are coalesced,
    else the other's entries first, then self's, uncoalesced -- PyTorch's order)."""
    if not _is_sparse(input):
        _no_dense_leaf_grad(other, "add")
        return input + other.to_dense() * alpha if alpha != 1 else input + other.to_dense()
    if not _is_sparse(other):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    if input.shape != other.shape:
        raise RuntimeError(f"add: expected sizes of 'self' and 'other' to match, but {list(input.shape)} "
                           f"!= {list(other.shape)}")
    if input is other:
        return _scaled(input, 1 + alpha)
    from ..ops.shape import cat
    result = _make(cat([other._ind, input._ind], dim=1), cat([other._val * alpha if alpha != 1 else other._val,
                                                            input._val]), input.shape, False)
    return result.coalesce() if input._coalesced and other._coalesced else result


def _scaled(s, factor):
    if isinstance(factor, SparseCooTensor) or isinstance(factor, Tensor) and factor.ndim:
        raise refuse("mul")
    return _make(s._ind, s._val * factor, s._size, s._coalesced)


def _is_scalar(x):
    return isinstance(x, numbers.Number) or isinstance(x, Tensor) and not _is_sparse(x) and x.ndim == 0


# -- operators and methods of SparseCooTensor ---------------------------------------------------

def _mul(self, other):
    if _is_scalar(other):
        return _scaled(self, other)
    from .elementwise import mul
    return mul(self, other)


def _truediv(self, other):
    if not _is_scalar(other):
        raise refuse("div")
    return _make(self._ind, self._val / other, self._size, self._coalesced)


def _t(self):
    if self.sparse_dim() != 2 or self.dense_dim():
        raise refuse("t")
    return _make(self._ind.flip(0), self._val, (self._size[1], self._size[0]), False)


def _transpose(self, dim0, dim1):
    d0, d1 = dim0 % self.ndim, dim1 % self.ndim
    if {d0, d1} == {0, 1}:
        return _t(self)
    raise refuse("transpose")


SPARSE_METHODS = {
    "mm": mm, "matmul": matmul, "__matmul__": matmul, "__rmatmul__": lambda self, other: matmul(other, self),
    "add": add, "__add__": add, "__radd__": lambda self, other: add(other, self),
    "sub": lambda self, other, *, alpha=1: add(self, other, alpha=-alpha),
    "__sub__": lambda self, other: add(self, other, alpha=-1),
    "__rsub__": lambda self, other: add(other, self, alpha=-1),
    "mul": _mul, "__mul__": _mul, "__rmul__": _mul, "div": _truediv, "__truediv__": _truediv,
    "__neg__": lambda self: _scaled(self, -1), "neg": lambda self: _scaled(self, -1),
    "sum": sum, "t": _t, "transpose": _transpose,
}
def _elementwise_methods():
    """The elementwise methods of :mod:`.elementwise` (imported after this module)."""
    from . import elementwise as E
    methods = {name: E._unary(name) for name in E.ZERO_PRESERVING}
    methods.update(pow=E._pow, __pow__=E._pow, index_select=E.index_select)
    return methods


SPARSE_METHODS.update(_elementwise_methods())
for _name, _fn in SPARSE_METHODS.items():
    setattr(SparseCooTensor, _name, _fn)


# -- the front doors -----------------------------------------------------------------------------

def _sparse_aware(dense_fn, sparse_fn):
    """``dense_fn`` unless one of the first two operands is sparse (a type check each)."""
    def fn(*args, **kwargs):
        if (args and type(args[0]) is SparseCooTensor) or (len(args) > 1 and type(args[1]) is SparseCooTensor):
            return sparse_fn(*args, **kwargs)
        return dense_fn(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = getattr(dense_fn, "__name__", sparse_fn.__name__)
    fn.__doc__ = dense_fn.__doc__
    fn.__wrapped__ = dense_fn
    return fn


def _dense_spmm(input, mat2):
    from ..ops.linalg import mm as dense_mm
    return dense_mm(input, mat2)


def _zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None,
                pin_memory=False):
    """``zeros_like``/``empty_like`` of a sparse tensor: sparse, with no stored entries
    (dense with ``layout=strided``)."""
    from ..ops.compat_tensor import strided
    from .coo import empty_sparse
    if layout is strided:
        from ..runtime.creation import zeros
        return zeros(tuple(input.shape), dtype=dtype or input.dtype, device=device or input.device,
                     requires_grad=requires_grad)
    return empty_sparse(input.shape, dtype or input.dtype, device or input.device, input.sparse_dim(),
                        requires_grad)


def _refusing(aten_name):
    def fn(*args, **kwargs):
        raise refuse(aten_name)
    return fn


_LIKE = {"zeros_like": _zeros_like, "empty_like": _zeros_like, "ones_like": _refusing("fill_.Scalar"),
         "full_like": _refusing("fill_.Scalar"), "rand_like": _refusing("uniform_"),
         "randn_like": _refusing("normal_"), "randint_like": _refusing("random_")}


def install(namespace):
    """Route ``tracegrad.mm/matmul/add/sum/mul/index_select`` through the sparse kernels for
    sparse operands, add ``spmm``, and give dense Tensors ``to_sparse``, ``sparse_mask`` and
    their sparse-aware operators."""
    from . import elementwise as E
    from .coo import to_sparse
    for name, sparse_fn in (("mm", mm), ("matmul", matmul), ("add", add), ("sum", sum), ("mul", E.mul),
                            ("multiply", E.mul), ("index_select", E.index_select), *_LIKE.items()):
        namespace[name] = _sparse_aware(namespace[name], sparse_fn)
    Tensor.sparse_mask = E.sparse_mask
    namespace["spmm"] = _sparse_aware(_dense_spmm, spmm)
    Tensor.to_sparse = to_sparse
    Tensor.to_sparse_coo = lambda self: to_sparse(self)
    Tensor.to_dense = lambda self, dtype=None, *, masked_grad=None: self if dtype is None else self.to(dtype)
