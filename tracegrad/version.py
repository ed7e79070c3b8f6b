"""``tracegrad.version``: what programs read from ``torch.version``. tracegrad's own
version is ``__version__``; ``torch_api`` is the PyTorch release whose API it follows;
``cuda`` is the CUDA runtime version CuPy was built for, or None without CuPy."""
import importlib.util

__version__ = "0.1.0"
torch_api = "2.13"
debug = False
hip = None
rocm = None
xpu = None
git_version = "unknown"


def _cuda_version():
    if importlib.util.find_spec("cupy") is None:
        return None
    try:
        import cupy
        v = cupy.cuda.runtime.runtimeGetVersion()
    except Exception:
        return None
    return f"{v // 1000}.{v % 1000 // 10}"


def __getattr__(name):
    if name == "cuda":  # asked for, not at import (importing CuPy is slow)
        return _cuda_version()
    raise AttributeError(f"module 'tracegrad.version' has no attribute '{name}'")
