"""Optional Numba kernels behind some of the rule table's CPU array kernels (GELU, layer
norm): each is a loop over plain C arrays whose NumPy form makes many passes over the
data. They are compiled, or loaded from the on-disk cache, at their first use through
:mod:`tracegrad.transform.jit` (``$TRACEGRAD_CACHE_DIR``), with an explicit signature so
that a failure shows at load time; where Numba is missing or fails, the caller's NumPy
kernel runs (with a warning for a failure). Numba is imported at the first use, never by
``import tracegrad``.
"""
import warnings

__all__ = ["forget", "kernel"]

_KERNELS = {}  # name -> the Numba dispatcher, or False where unavailable


def kernel(name, source, signature):
    """The compiled function ``name`` of the module ``source()`` (a callable, so that the
    text is only built when needed) for ``signature``; None where Numba cannot give it."""
    k = _KERNELS.get(name)
    if k is None:
        k = _KERNELS[name] = _load(name, source, signature)
    return k or None


def forget():
    """Forget the loaded kernels (tests simulate Numba's absence or failure)."""
    _KERNELS.clear()


def _load(name, source, signature):
    from ..transform import jit
    if not jit.available():
        return False
    try:
        k = jit.load_kernel(source(), name)
        k.compile(signature)  # (or loads it from the cache)
        return k
    except Exception as e:  # noqa: BLE001 -- a Numba error, a cache directory that cannot be written
        warnings.warn(f"tracegrad: the compiled kernel {name} is unavailable ({type(e).__name__}: {e}); "
                      "the NumPy kernel runs instead", RuntimeWarning, stacklevel=4)
        return False
