"""``torch.signal.windows``: the SciPy-style window functions PyTorch 2 ships.

They differ from the older ``torch.hann_window`` family (:mod:`tracegrad.ops.compat_functions`)
on purpose, as in PyTorch: every argument but ``M`` is keyword-only, the default is a
symmetric window (``sym=True``, for filter design) rather than a periodic one, only float32
and float64 are accepted, and bad arguments raise ``ValueError``.

Each window is a few Tensor operations on an evenly spaced grid, built as PyTorch builds it,
so values are computed in the requested dtype and ``requires_grad=True`` means what it means
there: the grid is a leaf that requires grad and the window is a non-leaf result of it
(``ExpBackward0``, ``SumBackward1``...). The empty window and the length-1 windows that need
no formula come back as leaves.
"""
import math
import numbers
from collections.abc import Iterable

from ..backend import dtypes as _dt
from ..ops.compat_tensor import strided
from ..runtime import creation

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _factory(name, M, dtype, layout, device, requires_grad):
    """PyTorch's checks every window makes first (in its order and words), then the keyword
    arguments to build the window's tensors with; ``dtype=None`` is the default dtype."""
    dtype = _dt.get_default_dtype() if dtype is None else dtype
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (_dt.float32, _dt.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    return {"dtype": dtype, "device": device, "requires_grad": requires_grad}


def _trivial(M, factory):
    """The windows no formula is needed for: no points for M=0, ``[1.]`` for M=1."""
    return creation.empty((0,), **factory) if M == 0 else creation.ones((1,), **factory)


def _span(M, sym):
    """The number of sample spacings the window's formula runs over: ``M - 1`` for a
    symmetric window, ``M`` for a periodic one (the first M points of a symmetric window of
    M + 1); a 1-point window is the same either way."""
    return M if not sym and M > 1 else M - 1


def _grid(start, end, M, factory):
    """``M`` evenly spaced points from ``start`` to ``end``: what every formula is applied to."""
    if isinstance(M, bool) or not isinstance(M, numbers.Integral):
        raise TypeError(f"the window length M must be an int, got {M!r} ({type(M).__name__})")
    return creation.linspace(float(start), float(end), M, **factory)


def bartlett(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """The triangular window ``1 - |2n/N - 1|``, N = M - 1 (``sym``) or M (periodic)."""
    f = _factory("bartlett", M, dtype, layout, device, requires_grad)
    if M in (0, 1):
        return _trivial(M, f)
    step = 2 / _span(M, sym)
    return 1 - _grid(-1, -1 + (M - 1) * step, M, f).abs()


def cosine(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """The sine window ``sin(pi (n + 1/2) / N)``, N = M (``sym``) or M + 1 (periodic), as in
    SciPy: it starts and ends above zero."""
    f = _factory("cosine", M, dtype, layout, device, requires_grad)
    if M == 0:
        return _trivial(M, f)
    step = math.pi / (_span(M, sym) + 1)
    return _grid(0.5 * step, (M - 0.5) * step, M, f).sin()


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=strided, device=None,
                requires_grad=False):
    """The exponential (Poisson) window ``exp(-|n - center| / tau)``; ``center`` defaults to
    the middle, N/2, and can only be moved in a periodic window (``sym=False``)."""
    f = _factory("exponential", M, dtype, layout, device, requires_grad)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _trivial(M, f)
    if center is None:
        center = _span(M, sym) / 2.0
    scale = 1 / tau
    return (-_grid(-center * scale, (M - 1 - center) * scale, M, f).abs()).exp()


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """The Gaussian window ``exp(-(n - N/2)**2 / (2 std**2))``."""
    f = _factory("gaussian", M, dtype, layout, device, requires_grad)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _trivial(M, f)
    first = -_span(M, sym) / 2.0
    scale = 1 / (std * math.sqrt(2))
    return (-_grid(first * scale, (first + M - 1) * scale, M, f) ** 2).exp()


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """The Kaiser window ``I0(beta sqrt(1 - (2n/N - 1)**2)) / I0(beta)`` (I0: the modified
    Bessel function of order 0); ``beta`` >= 0 trades main-lobe width for side-lobe level."""
    f = _factory("kaiser", M, dtype, layout, device, requires_grad)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M in (0, 1):
        return _trivial(M, f)
    # beta rounded to the window's dtype, and the grid clipped to it, so that beta**2 - k**2
    # is never negative (a NaN under the root) at the end points.
    beta = creation.tensor(beta, dtype=f["dtype"], device=device)
    step = 2.0 * beta / _span(M, sym)
    k = _grid(-beta, beta.minimum(-beta + (M - 1) * step), M, f)
    return (beta * beta - k ** 2).sqrt().i0() / beta.i0()


def general_cosine(M, *, a, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """The sum of cosines ``sum_i (-1)**i a[i] cos(2 pi i n / N)``: Hann, Hamming, Blackman
    and Nuttall are this with fixed coefficients ``a``."""
    f = _factory("general_cosine", M, dtype, layout, device, requires_grad)
    if M in (0, 1):
        return _trivial(M, f)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    k = _grid(0, (M - 1) * (2 * math.pi / _span(M, sym)), M, f)
    signed = creation.tensor([(-1) ** i * c for i, c in enumerate(a)], **f)
    order = creation.arange(signed.shape[0], **f)
    return (signed.unsqueeze(-1) * (order.unsqueeze(-1) * k).cos()).sum(0)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=strided, device=None,
                    requires_grad=False):
    """``alpha - (1 - alpha) cos(2 pi n / N)``: Hann for alpha = 0.5, Hamming for 0.54."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """The Hamming window, ``0.54 - 0.46 cos(2 pi n / N)``."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """The Hann window, ``0.5 - 0.5 cos(2 pi n / N)``."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """The Blackman window, ``0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)``."""
    _factory("blackman", M, dtype, layout, device, requires_grad)  # errors name blackman, as in PyTorch
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


# Nuttall's minimum 4-term Blackman-Harris coefficients (IEEE Trans. ASSP 29(1), 1981).
_NUTTALL = [0.3635819, 0.4891775, 0.1365995, 0.0106411]


def nuttall(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """Nuttall's minimum 4-term Blackman-Harris window (side lobes below -93 dB)."""
    return general_cosine(M, a=_NUTTALL, sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)
