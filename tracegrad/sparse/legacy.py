"""``torch.sparse.FloatTensor(indices, values, size)`` and its siblings: PyTorch's legacy
sparse constructors, which older graph code (Kipf's pygcn) still calls. Each makes a sparse
COO tensor, with PyTorch's deprecation warning: from ``indices`` and ``values`` (whose dtype
it keeps, as PyTorch does, whatever the type's name says), or an empty one of a shape in
the type's dtype. ``isinstance(s, torch.sparse.FloatTensor)`` asks for a sparse tensor of
that dtype."""
import warnings

from ..backend import dtypes as _dt
from ..runtime.legacy_types import LEGACY_TYPES
from ..runtime.tensor import Size, Tensor
from .coo import SparseCooTensor, sparse_coo_tensor

__all__ = ["SPARSE_LEGACY_TYPES"]


class sparsetype(type):
    """The metaclass of the legacy sparse types."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, SparseCooTensor) and obj.dtype is cls.dtype

    def __call__(cls, *args, device=None):
        if args and isinstance(args[0], Tensor):  # (indices, values[, size])
            if len(args) not in (2, 3):
                raise TypeError(f"{cls.__name__}() takes (indices, values) or (indices, values, size), "
                                f"got {len(args)} arguments")
            shape = "shape, " if len(args) == 3 else ""
            _warn(f"indices, values, {shape}*, device=", f"indices, values, {shape}dtype=, device=")
            return sparse_coo_tensor(*args, device=device)
        sizes = tuple(args[0]) if len(args) == 1 and isinstance(args[0], (Size, tuple, list)) else args
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in sizes):
            raise TypeError(f"{cls.__name__}() takes (indices, values[, size]) or a size")
        _warn("shape, *, device=", "shape, dtype=, device=")
        from ..runtime.creation import zeros
        size = sizes or (0,)
        return sparse_coo_tensor(zeros((len(size), 0), dtype=_dt.int64), zeros(0, dtype=cls.dtype), size,
                                 device=device)

    def __repr__(cls):
        return f"<class 'tracegrad.sparse.{cls.__name__}'>"


def _warn(old, new):
    warnings.warn(f"torch.sparse.SparseTensor({old}) is deprecated.  Please use torch.sparse_coo_tensor({new}).",
                  UserWarning, stacklevel=3)


SPARSE_LEGACY_TYPES = {name: sparsetype(name, (), {"dtype": legacy.dtype, "is_sparse": True,
                                                   "__module__": "tracegrad.sparse"})
                       for name, legacy in LEGACY_TYPES.items()}
