"""``tracegrad.accelerator``: the device-agnostic accelerator API of PyTorch 2.6+.

tracegrad's only accelerator is CUDA (through CuPy): where it is not available every
question answers "none" and the calls that need a device raise PyTorch's error.
"""
from . import cuda as _cuda
from .backend import device as _device

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index",
           "current_device_idx", "set_device_index", "set_device_idx", "synchronize", "empty_cache"]

_NONE = "Cannot access accelerator device when none is available."


def is_available():
    return _cuda.is_available()


def current_accelerator(check_available=False):
    """``device(type='cuda')`` when CUDA is available, else None."""
    return _device("cuda") if _cuda.is_available() else None


def device_count():
    return _cuda.device_count()


def _need():
    if not _cuda.is_available():
        raise RuntimeError(_NONE)


def current_device_index():
    _need()
    return _cuda.current_device()


current_device_idx = current_device_index


def set_device_index(device):
    """Only the current CUDA device computes in tracegrad: setting another one is refused."""
    _need()
    index = device if isinstance(device, int) else _device(device).index
    if index not in (None, -1, _cuda.current_device()):
        raise RuntimeError(f"tracegrad computes on the current CUDA device ({_cuda.current_device()}); "
                           "make another one current with cupy.cuda.Device(n).use()")


set_device_idx = set_device_index


def synchronize(device=None):
    _need()
    _cuda.synchronize()


def empty_cache():
    """Nothing is cached where no accelerator is; on CUDA, CuPy's memory pool is freed."""
    if _cuda.is_available():
        import cupy
        cupy.get_default_memory_pool().free_all_blocks()
