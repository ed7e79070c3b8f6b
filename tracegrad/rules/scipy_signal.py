"""``scipy.signal.convolve`` of two n-d arrays, in its ``full`` and ``valid`` modes (its
``same`` mode and ``correlate`` are slices and flips of these, in
:mod:`tracegrad.scipy.signal`).

Convolution is bilinear, so each vjp is a correlation with the other operand -- a
convolution with it flipped -- in the other mode: for ``out = in1 * in2`` (full),
``g1 = valid(g, flip(in2))``; for ``valid`` (``in1`` at least as large as ``in2`` in
every dim), ``g1 = full(g, flip(in2))`` and ``g2 = valid(flip(in1), g)``. Being written
with the primitive itself, the vjps have derivatives too; no conjugates (bilinear: JAX's
complex convention holds as written). The kernel is SciPy's (direct or FFT, as
``method`` asks), imported when it first runs, on the host for arrays of other devices.
"""
from ._scipy import scipy_module
from .core import primitive
from .shape import flip

__all__ = ["convolve", "flipped"]


def _scipy_convolve():
    return scipy_module("scipy.signal", "convolve").convolve


@primitive(complex=True)
def convolve(xp, in1, in2, *, mode="full", method="auto"):
    """The n-d convolution of ``in1`` and ``in2`` (same number of dims; ``mode`` "full",
    or "valid" with ``in1`` at least as large as ``in2`` in every dim)."""
    if mode not in ("full", "valid"):
        raise ValueError(f"convolve rule: mode must be 'full' or 'valid', got {mode!r}")
    if in1.ndim != in2.ndim:
        raise ValueError("in1 and in2 should have the same dimensionality")
    if mode == "valid" and any(a < b for a, b in zip(in1.shape, in2.shape)):
        raise ValueError(f"convolve rule: 'valid' needs in1 {in1.shape} at least as large as in2 {in2.shape}")
    if in1.ndim == 0:
        return in1 * in2
    if getattr(xp, "name", "cpu") == "cpu":
        return _scipy_convolve()(in1, in2, mode=mode, method=method)
    return xp.from_host(_scipy_convolve()(xp.to_host(in1), xp.to_host(in2), mode=mode, method=method))


def flipped(x):
    """``x`` reversed along every dim."""
    return flip(x, dims=tuple(range(x.ndim))) if x.ndim else x


@convolve.vjp("in1", uses="in2")
def convolve_vjp_in1(g, out, in1, in2, *, mode="full", method="auto"):
    return convolve(g, flipped(in2), mode="valid" if mode == "full" else "full", method=method)


@convolve.vjp("in2", uses="in1")
def convolve_vjp_in2(g, out, in1, in2, *, mode="full", method="auto"):
    if mode == "full":
        return convolve(g, flipped(in1), mode="valid", method=method)
    return convolve(flipped(in1), g, mode="valid", method=method)


@convolve.jvp("in1")
def convolve_jvp_in1(t, out, in1, in2, *, mode="full", method="auto"):
    return convolve(t, in2, mode=mode, method=method)


@convolve.jvp("in2")
def convolve_jvp_in2(t, out, in1, in2, *, mode="full", method="auto"):
    return convolve(in1, t, mode=mode, method=method)
