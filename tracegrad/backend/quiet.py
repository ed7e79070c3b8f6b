"""NumPy's floating-point error handling, kept out of tracegrad's own kernels.

PyTorch computes ``log(0) = -inf``, ``0/0 = nan`` or an overflow to inf silently, whatever
NumPy's settings. NumPy warns, or raises where the program asked it to: under
``np.seterr(all="raise")`` (FloatingPointError) or a warnings filter that turns warnings
into errors (``warnings.simplefilter("error")``, pytest's ``filterwarnings = error``),
which stands in front of the filter ``tracegrad.backend`` adds for its own modules. A
tracegrad operation must give PyTorch's value either way, without changing how the
program's own NumPy code behaves. So:

- an operation that makes new arrays (most of them: every rule's forward, every vjp) runs
  as it is, at no cost, and where NumPy raised one of :data:`FP_ERRORS` it runs again
  with NumPy's errors ignored (:func:`quietly`): it had changed nothing;
- an operation that writes in place cannot run twice (the write may be done when NumPy
  raises), so it runs with NumPy's errors ignored from the start (:func:`silence` /
  :func:`restore`, ~0.1 us through NumPy 2's context variable, an ``np.errstate``
  otherwise).
"""
import numpy as _np

__all__ = ["FP_ERRORS", "quietly", "silence", "restore"]

FP_ERRORS = (FloatingPointError, RuntimeWarning)

try:  # NumPy 2 keeps its error state in a context variable: set and reset it directly
    from numpy._core._ufunc_config import _extobj_contextvar as _STATE
    with _np.errstate(all="ignore"):
        _IGNORE = _STATE.get()
except (ImportError, AttributeError):  # pragma: no cover - NumPy 1.x
    _STATE = None


def quietly(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` with NumPy's floating-point errors ignored."""
    token = silence()
    try:
        return fn(*args, **kwargs)
    finally:
        restore(token)


def silence():
    """Ignore NumPy's floating-point errors in this context until :func:`restore`."""
    if _STATE is not None:
        return _STATE.set(_IGNORE)
    state = _np.errstate(all="ignore")
    state.__enter__()
    return state


def restore(token):
    if _STATE is not None:
        _STATE.reset(token)
    else:
        token.__exit__(None, None, None)
