"""``tracegrad.cuda``: the CUDA device, through CuPy (the ``gpu`` extra).

Nothing here imports CuPy until asked: ``is_available()`` on a machine without CuPy or
without a GPU answers False instead of failing.
"""
import importlib.util

__all__ = ["is_available", "is_bf16_supported", "device_count", "current_device", "synchronize", "manual_seed",
           "manual_seed_all", "get_device_name", "memory_allocated", "memory_reserved", "max_memory_allocated",
           "max_memory_reserved", "reset_peak_memory_stats", "empty_cache", "memory_stats"]


def device_count():
    """How many CUDA devices CuPy sees (0 without CuPy, a driver or a GPU)."""
    if importlib.util.find_spec("cupy") is None:
        return 0
    try:
        from .backend import cuda
    except Exception:  # CuPy installed but its CUDA libraries are missing: no devices
        return 0
    return cuda.device_count()


def is_available():
    return device_count() > 0


def is_bf16_supported(including_emulation=True):
    """False: tracegrad's arrays (NumPy, CuPy) have no bfloat16, whatever the GPU can do."""
    return False


def _namespace():
    from . import backend
    return backend.namespace_for("cuda")  # raises PyTorch-like when CUDA is not available


def current_device():
    """The index of the device CUDA tensors are made on."""
    return _namespace().current_index()


def get_device_name(device=None):
    """The name of a GPU (``'NVIDIA H100 80GB HBM3'``): ``device`` is an index, ``'cuda'``,
    ``'cuda:1'``, a device object, or None for the current one."""
    import cupy
    return cupy.cuda.runtime.getDeviceProperties(_index_of(device))["name"].decode()


def _index_of(device):
    """The CUDA device index ``device`` (as :func:`get_device_name` takes it) names."""
    from . import backend
    ns = _namespace()
    if device is None or isinstance(device, int):
        return ns.current_index() if device is None else device
    dev = backend.device(device)
    if dev.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {dev}")
    return ns.current_index() if dev.index is None else dev.index


def synchronize(device=None):
    """Wait until every kernel queued on the GPU has finished. Time GPU work with this:
    CuPy's calls return before their kernels end. Raises where CUDA is not available, as
    PyTorch does."""
    _namespace().synchronize()


def manual_seed(seed):
    """Seed the CUDA device's default random stream (only; ``tracegrad.manual_seed``
    seeds every device). Silently ignored where CUDA is not available, as in PyTorch."""
    if is_available():
        _namespace().seed(int(seed) % 2 ** 64)


manual_seed_all = manual_seed


# -- memory: CuPy's default memory pool holds what CUDA tensors use -----------------------

def _pool():
    """CuPy's default memory pool, or None where CUDA is not available (every figure is
    then 0, as PyTorch reports on a machine without CUDA)."""
    if not is_available():
        return None
    import cupy
    return cupy.get_default_memory_pool()


def memory_allocated(device=None):
    """Bytes held by CUDA tensors now (the pool's blocks in use)."""
    pool = _pool()
    return 0 if pool is None else pool.used_bytes()


def memory_reserved(device=None):
    """Bytes the pool holds from the driver, in use or cached for reuse."""
    pool = _pool()
    return 0 if pool is None else pool.total_bytes()


def _no_peaks(name):
    """CuPy's pool keeps no high-water mark: refuse rather than report a wrong peak."""
    if _pool() is None:
        return 0
    raise NotImplementedError(f"tracegrad.cuda.{name}: CuPy's memory pool keeps no peak; measure with "
                              "memory_allocated() at the points that matter")


def max_memory_allocated(device=None):
    """The peak of :func:`memory_allocated`: 0 without CUDA; not tracked on CuPy."""
    return _no_peaks("max_memory_allocated")


def max_memory_reserved(device=None):
    """The peak of :func:`memory_reserved`: 0 without CUDA; not tracked on CuPy."""
    return _no_peaks("max_memory_reserved")


def reset_peak_memory_stats(device=None):
    """Raises where CUDA is not available, as PyTorch does; the peaks are not tracked on CuPy."""
    _namespace()
    _no_peaks("reset_peak_memory_stats")


def empty_cache():
    """Give the pool's cached, unused blocks back to the driver (nothing without CUDA)."""
    pool = _pool()
    if pool is not None:
        pool.free_all_blocks()


def memory_stats(device=None):
    """An (ordered) dict of memory figures: empty without CUDA, as PyTorch's."""
    import collections
    pool = _pool()
    if pool is None:
        return collections.OrderedDict()
    return collections.OrderedDict([("allocated_bytes.all.current", pool.used_bytes()),
                                    ("reserved_bytes.all.current", pool.total_bytes())])


from .runtime.legacy_types import CUDA_LEGACY_TYPES as _LEGACY_TYPES  # noqa: E402
globals().update(_LEGACY_TYPES)  # tracegrad.cuda.FloatTensor...


from .amp import device_amp_module as _device_amp_module  # noqa: E402
amp = _device_amp_module("cuda", __name__)  # (PyTorch's deprecated torch.cuda.amp)
