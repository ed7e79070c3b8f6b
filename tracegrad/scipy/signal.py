"""``scipy.signal.convolve`` and ``correlate`` with derivatives in both inputs: SciPy's
signatures and modes ("full", "valid", "same") for n-d arrays of the same number of dims,
on arrays, tape tracers and Tensors (rule ``convolve``, :mod:`tracegrad.rules.scipy_signal`;
"same" is a slice of "full", correlate a convolution with the second input flipped and
conjugated). ``method`` ("auto", "direct", "fft") picks SciPy's kernel, not the result.

HIPS autograd's own ``convolve`` adds ``axes`` and ``dot_axes`` arguments (a convolution
over some axes and a tensordot over others); SciPy has no such arguments, and neither has
this module.
"""
from ..backend import cpu
from ..rules.complex_ import conj_of
from ..rules.index import basic_index
from ..rules.scipy_signal import convolve as _convolve
from ..rules.scipy_signal import flipped

__all__ = ["convolve", "correlate"]

_MODES = ("full", "valid", "same")


def _operand(x):
    return x if hasattr(x, "shape") and hasattr(x, "ndim") else cpu.asarray(x)


def _inputs_swap_needed(mode, shape1, shape2):
    """SciPy's rule: in "valid" mode the larger operand goes first; neither being larger
    in every dim is an error."""
    if mode != "valid":
        return False
    if all(a >= b for a, b in zip(shape1, shape2)):
        return False
    if all(a <= b for a, b in zip(shape1, shape2)):
        return True
    raise ValueError("For 'valid' mode, one must be at least as large as the other in every dimension")


def convolve(in1, in2, mode="full", method="auto"):
    """The n-dimensional convolution of ``in1`` and ``in2``: its whole (``full``), the part
    that needs no zero padding (``valid``), or the part centred as ``in1`` (``same``)."""
    in1, in2 = _operand(in1), _operand(in2)
    if mode not in _MODES:
        raise ValueError("acceptable mode flags are 'valid', 'same', or 'full'")
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"acceptable method flags are 'auto', 'direct', or 'fft', got {method!r}")
    if in1.ndim != in2.ndim:
        raise ValueError("in1 and in2 should have the same dimensionality")
    if in1.ndim == 0:
        return in1 * in2
    if 0 in tuple(in1.shape) or 0 in tuple(in2.shape):
        raise ValueError("convolve: in1 and in2 cannot be empty (SciPy's convolve refuses them too)")
    if mode == "same":
        full = _convolve(in1, in2, mode="full", method=method)
        starts = [(f - n) // 2 for f, n in zip(full.shape, in1.shape)]
        return basic_index(full, index=tuple(slice(s, s + n) for s, n in zip(starts, in1.shape)))
    if _inputs_swap_needed(mode, in1.shape, in2.shape):
        in1, in2 = in2, in1
    return _convolve(in1, in2, mode=mode, method=method)


def correlate(in1, in2, mode="full", method="auto"):
    """The n-dimensional cross-correlation ``z[k] = sum_l in1[l] conj(in2[l - k])`` (SciPy's
    offsets): the convolution of ``in1`` with ``in2`` flipped and conjugated."""
    return convolve(in1, flipped(conj_of(_operand(in2))), mode, method)
