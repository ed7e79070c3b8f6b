"""PyTorch's legacy tensor types (``FloatTensor``, ``LongTensor``... and their ``cuda.``
twins), ``set_default_tensor_type``, and the default device factories follow.

A legacy type is not a Tensor subclass (as in PyTorch): calling it makes a plain Tensor of
its dtype, and ``isinstance(t, FloatTensor)`` asks whether ``t`` is a Tensor of that dtype
on that device type (``isinstance(tracegrad.zeros(2), tracegrad.FloatTensor)`` is True).
"""
import warnings

from .. import backend
from ..backend import dtypes as _dt
from .tensor import Size, Tensor

__all__ = ["tensortype", "LEGACY_TYPES", "CUDA_LEGACY_TYPES", "legacy_type", "set_default_tensor_type",
           "set_default_device", "get_default_device"]


class tensortype(type):
    """The metaclass of the legacy types: instances are Tensors of a dtype and device type."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device.type == cls._device_type

    def __call__(cls, *args, device=None, **kwargs):
        if kwargs:
            raise TypeError(f"new() received an invalid combination of arguments - got keyword "
                            f"arguments {sorted(kwargs)}; {cls.__name__}() takes data, a size, or a "
                            "tensor, and device=")
        device = backend.device(device if device is not None else cls._device_type)
        if device.type != cls._device_type:
            raise RuntimeError(f"legacy constructor expects device type: {cls._device_type} but device "
                               f"type: {device.type} was passed")
        if len(args) == 1 and isinstance(args[0], Tensor):
            t = args[0]
            if t.dtype is not cls.dtype or t.device.type != device.type:
                raise TypeError(f"expected {cls.dtype} on {device.type} (got {t.dtype} on {t.device.type})")
            return t.detach()
        from .creation import tensor, zeros
        if not args:
            return zeros(0, dtype=cls.dtype, device=device)
        if isinstance(args[0], Size) or all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            return zeros(*args, dtype=cls.dtype, device=device)  # PyTorch leaves it uninitialised
        if len(args) > 1:
            raise TypeError(f"new() received an invalid combination of arguments - got {len(args)} "
                            f"positional arguments; {cls.__name__}() takes data or a size")
        return tensor(args[0], dtype=cls.dtype, device=device)

    def __repr__(cls):
        return f"<class '{cls.__module__}.{cls.__qualname__}'>"


def _make(d, device_type):
    module = "tracegrad" if device_type == "cpu" else "tracegrad.cuda"
    return tensortype(d._legacy, (), {"dtype": d, "_device_type": device_type, "is_cuda": device_type == "cuda",
                                      "is_sparse": False, "__module__": module,
                                      "__doc__": f"Legacy constructor of {d!r} tensors on {device_type}."})


_LEGACY_DTYPES = (_dt.float32, _dt.float64, _dt.float16, _dt.int64, _dt.int32, _dt.int16, _dt.int8,
                  _dt.uint8, _dt.bool_, _dt.complex64, _dt.complex128)
LEGACY_TYPES = {d._legacy: _make(d, "cpu") for d in _LEGACY_DTYPES}
CUDA_LEGACY_TYPES = {d._legacy: _make(d, "cuda") for d in _LEGACY_DTYPES}


def legacy_type(spec):
    """The legacy type a class or a name (``'torch.cuda.FloatTensor'``, ``'FloatTensor'``) means."""
    if isinstance(spec, tensortype):
        return spec
    if isinstance(spec, str):
        parts = spec.split(".")
        if parts[0] in ("torch", "tracegrad"):
            parts = parts[1:]
        table = CUDA_LEGACY_TYPES if parts[:1] == ["cuda"] else LEGACY_TYPES
        found = table.get(parts[-1]) if len(parts) in (1, 2) and parts[:-1] in ([], ["cuda"]) else None
        if found is not None:
            return found
    raise TypeError(f"invalid type: '{spec}'")


def set_default_tensor_type(t):
    """Deprecated in PyTorch 2.1 (use ``set_default_dtype`` and ``set_default_device``):
    sets the default float dtype, and the default device for a ``cuda.`` type."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    cls = legacy_type(t)
    if not cls.dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _dt.set_default_dtype(cls.dtype)
    if cls._device_type == "cuda":
        set_default_device("cuda")


def set_default_device(device):
    """Where factories (``zeros``, ``tensor``, ``rand``...) put tensors when not told;
    None (or ``'cpu'``) for the CPU. As in PyTorch a CUDA default is accepted here and the
    factories raise when CUDA is not available."""
    backend._default_device[0] = None if device is None else backend.device(device)


def get_default_device():
    """The device factories put tensors on (``cuda:0``-style, with its index)."""
    from .creation import tensor
    return tensor([]).device
