"""Scatter-add for every dtype on top of an atomic add that knows only a few.

CuPy's ``cupyx.scatter_add`` accumulates repeated indices with CUDA's ``atomicAdd``,
which exists for float16/32/64, int32, uint32 and uint64 only. PyTorch's
``index_put_(accumulate=True)``, ``scatter_add_`` and the backward of ``embedding``
accept any dtype, so the others are routed onto those:

* int64 through a uint64 view of the same memory: two's-complement addition is the
  same bit operation, signed or not;
* int8/16, uint8/16 and bool through an int32 copy, cast back (the sum wraps exactly as
  adding in the small type would; bool's sum is nonzero where any True was added, as
  NumPy's logical ``add.at``);
* complex through its real and imaginary parts (views, each a float add).

The raw add is a parameter, so the routing holds for any device's add that refuses the
same dtypes.
"""
import numpy as _np

# What CUDA's atomicAdd (so cupyx.scatter_add) accumulates directly.
NATIVE = frozenset(_np.dtype(n) for n in ("float16", "float32", "float64", "int32", "uint32",
                                          "uint64"))
_INT64 = _np.dtype(_np.int64)


def scatter_add_any(xp, add, target, index, values):
    """``target[index] += values`` with repeated indices accumulated, for every dtype of
    ``target``, calling ``add(target, index, values)`` (the raw scatter-add of namespace
    ``xp``) only on dtypes in :data:`NATIVE`."""
    dtype = target.dtype
    if dtype in NATIVE:
        add(target, index, values)
        return
    values = xp.asarray(values).astype(dtype, copy=False)
    if dtype == _INT64:
        add(target.view(_np.uint64), index, values.view(_np.uint64))
    elif dtype.kind == "c":
        scatter_add_any(xp, add, target.real, index, values.real)
        scatter_add_any(xp, add, target.imag, index, values.imag)
    elif dtype.kind in "biu" and dtype.itemsize < 4:
        wide = target.astype(_np.int32)
        add(wide, index, values.astype(_np.int32))
        target[...] = wide.astype(dtype)
    else:
        raise TypeError(f"scatter_add: no way to accumulate {dtype} on this device")
