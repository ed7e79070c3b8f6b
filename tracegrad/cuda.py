"""``tracegrad.cuda``: whether a CUDA device can be used (through CuPy, the ``gpu`` extra)."""
import importlib.util

__all__ = ["is_available", "device_count"]


def device_count():
    """How many CUDA devices CuPy sees (0 without CuPy or without a GPU)."""
    if importlib.util.find_spec("cupy") is None:
        return 0
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # CuPy installed but no driver/GPU: no devices
        return 0


def is_available():
    return device_count() > 0
