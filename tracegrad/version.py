"""``tracegrad.version``: what programs read from ``torch.version``. ``torch_api`` is the
PyTorch release whose API tracegrad follows and ``tracegrad`` its own release;
``__version__`` (also ``tracegrad.__version__``) is ``2.13.0+tracegrad.<release>``, a
:class:`~tracegrad.torch_version.TorchVersion`, so that programs that branch on
``torch.__version__`` take the branch for the API they get; ``cuda`` is the CUDA runtime
version CuPy was built for, or None without CuPy."""
import importlib.util

from .torch_version import TorchVersion

tracegrad = "0.1.0"
torch_api = "2.13"
__version__ = TorchVersion(f"{torch_api}.0+tracegrad.{tracegrad}")
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
