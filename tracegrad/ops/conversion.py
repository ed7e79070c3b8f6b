"""Dtype and device conversion (``to``, ``float()``, ``cpu()``...) and ``new_*`` factories."""
from .. import backend
from ..backend import dtypes as _dt
from ..rules import memory as M
from ..runtime import creation as C
from ..runtime.tensor import Tensor
from ..runtime.vmapped import is_vmapped


def _parse_to(args, kwargs):
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    other = kwargs.pop("other", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            other = a
        elif isinstance(a, (_dt.dtype, _dt.unavailable_dtype)) or a in (float, int, bool, complex):
            dtype = a
        elif isinstance(a, (str, backend.device)):
            device = a
        elif isinstance(a, bool):
            continue
        else:
            raise TypeError(f"to() received an invalid combination of arguments: {a!r}")
    if other is not None:
        device, dtype = other.device, other.dtype
    return device, (None if dtype is None else _dt.as_dtype(dtype)), copy


def to(input, *args, **kwargs):
    """A tensor with the requested dtype and/or device (``input`` itself if nothing changes)."""
    device, dtype, copy = _parse_to(args, dict(kwargs))
    out = input
    if dtype is not None and dtype != input.dtype:
        out = M.cast(out, dtype=dtype.np, src_dtype=input.dtype.np)
        copy = False
    if device is not None and _other_device(backend.device(device), input.device):
        from .devices import to_device
        out = to_device(out, backend.device(device))
        copy = False
    if copy:
        out = M.clone(out)
    return out


def _other_device(target, current):
    """Whether ``target`` names another device than ``current`` (``'cuda'`` without an
    index means the current GPU; ``cuda:1`` is another GPU even from ``cuda:0``)."""
    if target.type != current.type:
        return True
    return target.type == "cuda" and target.index is not None and target.index != current.index


def _cast_method(d):
    def method(self, memory_format=None):
        return to(self, d)
    method.__name__ = d.name
    return method


def cpu(input, memory_format=None):
    return to(input, "cpu")


def cuda(input, device=None, non_blocking=False, memory_format=None):
    return to(input, "cuda" if device is None else backend.device("cuda", device if isinstance(device, int) else None))


def _new(factory):
    name = "new_" + factory.__name__

    def method(self, *given, size=None, dtype=None, device=None, requires_grad=False):
        if size is not None:  # (``x.new_zeros(size=(2, 3))``, as PyTorch's methods take it)
            from .shape import _keyword_form
            given = _keyword_form(given, size, name, "size")
        return _batched_as(self, factory(*given, dtype=dtype or self.dtype, device=device or self.device),
                           requires_grad)
    method.__name__ = method.__qualname__ = name  # (Python's argument errors name it)
    return method


def _batched_as(self, t, requires_grad):
    """``self.new_*(...)``'s result ``t``: batched when ``self`` is (under vmap, as in torch)."""
    if is_vmapped(self):
        from ..func._samples import batched_like
        t = batched_like(t, self)
    return t.requires_grad_(True) if requires_grad else t


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    return C.tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    return _batched_as(self, C.full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device),
                       requires_grad)


def is_pinned(input, device=None):
    """Whether ``input`` lives in page-locked host memory. Only CuPy allocates such memory
    (``pin_memory``), so without CUDA nothing is pinned."""
    if input.device.type != "cpu" or not _cuda_available():
        return False
    import cupy
    try:
        attributes = cupy.cuda.runtime.pointerGetAttributes(input._data.ctypes.data)
    except cupy.cuda.runtime.CUDARuntimeError:
        return False
    return attributes.type == 1  # cudaMemoryTypeHost


def pin_memory(input, device=None):
    """A copy of ``input`` in page-locked host memory (``input`` itself if it is pinned
    already), for faster copies to the GPU; as in PyTorch, an error without one."""
    if not _cuda_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    if input.device.type != "cpu":
        raise RuntimeError(f"cannot pin '{input.type()}' only dense CPU tensors can be pinned")
    if is_pinned(input):
        return input
    import cupyx
    out = input.clone()  # a differentiable copy, whose buffer then moves to pinned memory
    pinned = cupyx.empty_pinned(out._data.shape, out._data.dtype)
    pinned[...] = out._data
    out._data = pinned
    return out


def _cuda_available():
    from .. import cuda
    return cuda.is_available()


METHODS = {
    "to": to, "cpu": cpu, "cuda": cuda, "float": _cast_method(_dt.float32),
    "double": _cast_method(_dt.float64), "half": _cast_method(_dt.float16),
    "int": _cast_method(_dt.int32), "long": _cast_method(_dt.int64),
    "short": _cast_method(_dt.int16), "char": _cast_method(_dt.int8),
    "byte": _cast_method(_dt.uint8), "bool": _cast_method(_dt.bool_),
    "cfloat": _cast_method(_dt.complex64), "cdouble": _cast_method(_dt.complex128),
    "new_tensor": new_tensor, "new_zeros": _new(C.zeros), "new_ones": _new(C.ones),
    "new_empty": _new(C.empty), "new_full": new_full, "is_pinned": is_pinned, "pin_memory": pin_memory,
}
