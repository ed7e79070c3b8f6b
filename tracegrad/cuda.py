"""``tracegrad.cuda``: the CUDA device, through CuPy (the ``gpu`` extra).

Nothing here imports CuPy until asked: ``is_available()`` on a machine without CuPy or
without a GPU answers False instead of failing.
"""
import importlib.util

__all__ = ["is_available", "is_bf16_supported", "device_count", "current_device", "synchronize", "manual_seed",
           "manual_seed_all", "get_device_name"]


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


from .runtime.legacy_types import CUDA_LEGACY_TYPES as _LEGACY_TYPES  # noqa: E402
globals().update(_LEGACY_TYPES)  # tracegrad.cuda.FloatTensor...


def _amp_module():
    """``tracegrad.cuda.amp``: PyTorch's deprecated spellings of ``tracegrad.amp``'s names."""
    import sys
    import types
    import warnings

    from . import amp as _amp

    def deprecated(name, make):
        def construct(*args, **kwargs):
            warnings.warn(f"`torch.cuda.amp.{name}(args...)` is deprecated. Please use "
                          f"`torch.amp.{name}('cuda', args...)` instead.", FutureWarning, stacklevel=2)
            return make("cuda", *args, **kwargs)
        return construct
    module = types.ModuleType(__name__ + ".amp", _amp_module.__doc__)
    module.autocast = deprecated("autocast", _amp.autocast)
    module.GradScaler = deprecated("GradScaler", _amp.GradScaler)
    module.custom_fwd, module.custom_bwd = _amp.custom_fwd, _amp.custom_bwd
    sys.modules[module.__name__] = module
    return module


amp = _amp_module()
