"""Argument normalisation shared by the torch-style functions: dims, shapes, scalars."""
from ..runtime.tensor import Tensor

__all__ = ["wrap_dim", "wrap_dims", "shape_args", "scalar", "is_number"]


def wrap_dim(dim, ndim):
    """A dimension index checked and made non-negative, with PyTorch's IndexError."""
    n = max(ndim, 1)
    if isinstance(dim, Tensor):
        dim = int(dim)
    if not isinstance(dim, int) or isinstance(dim, bool) or not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def wrap_dims(dim, ndim):
    """``None`` (all dims), an int, or a sequence of ints -> a sorted tuple of dims."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (list, tuple)):
        dims = tuple(wrap_dim(d, ndim) for d in dim)
        for i, d in enumerate(dims):
            if d in dims[:i]:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        return tuple(sorted(dims))
    return (wrap_dim(dim, ndim),)


def shape_args(shape):
    """``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])``, ``f(Size)`` -> (2, 3)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return tuple(int(s) for s in shape)


def is_number(x):
    return isinstance(x, (int, float, complex))


def scalar(x):
    """A Python number from a number or a one-element tensor (for scalar arguments)."""
    return x.item() if isinstance(x, Tensor) else x
