"""Argument normalisation shared by the torch-style functions: dims, shapes, scalars."""
from ..backend import cpu as _cpu
from ..runtime.shapes import shape_args
from ..runtime.tensor import Tensor, wrap_dim
from ..runtime.vmapped import is_vmapped

__all__ = ["wrap_dim", "wrap_dims", "shape_args", "scalar", "is_number", "result_type", "per_sample",
           "every_sample", "out_of_range", "on_samples"]


def per_sample(t):
    """Whether ``t`` is one sample of a batch under ``vmap`` (a BatchedTensor of
    tracegrad.func): its ``_data`` holds sample 0 only, so code that reads values must go
    through primitives (which batch) instead. (runtime.vmapped's test: a user's Tensor
    subclass is not a sample.)"""
    return is_vmapped(t)


def every_sample(t):
    """The Tensor of all samples' values behind ``t`` (``t`` itself outside vmap): for code
    that checks values (index bounds), never for computing a result."""
    while is_vmapped(t):
        t = t._phys
    return t


def out_of_range(index, size, negatives=False):
    """The first bound an index tensor (every sample's, under vmap) passes: its least value
    below 0 (below ``-size`` with ``negatives``) or its greatest at ``size`` or above; None
    where all are in range."""
    if not index.numel():
        return None
    every = every_sample(index)
    lo, hi = int(every.min()), int(every.max())
    return lo if lo < (-size if negatives else 0) else (hi if hi >= size else None)


def on_samples(fn, *args, leading=False):
    """``fn(*args)`` -- array code that reads values -- on every sample of the vmap batches
    among ``args``, results batched again (tracegrad.func._samples); ``fn(*args)`` itself
    outside vmap. For values that are not differentiated (indices, status codes)."""
    if not any(is_vmapped(a) for a in args):
        return fn(*args)
    from ..func._samples import on_samples as run
    return run(fn, *args, leading=leading)


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


def is_number(x):
    return isinstance(x, (int, float, complex))


def result_type(*operands):
    """``torch.result_type`` of Tensors and Python numbers."""
    from ..runtime.dispatch import result_dtype
    return result_dtype([x._data if isinstance(x, Tensor) else
                         x.value if getattr(x, "is_traced_tensor", False) else x for x in operands])


def scalar(x):
    """A Python number from a number, a NumPy scalar (``np.log(1e-8)``: NumPy 2 would keep
    its float64 in the kernels) or a one-element tensor (for scalar arguments)."""
    return x.item() if isinstance(x, (Tensor, _cpu.generic)) else x
