"""``torch.fft``: discrete Fourier transforms with PyTorch's signatures and errors.

Each function reads its arguments (``n``/``s``, ``dim``, ``norm``) into FFT lengths and
axes and calls the transforms of :mod:`tracegrad.rules.fft`, which the tape's
``numpy.fft`` shares; gradients follow PyTorch's conjugate convention like every complex
rule in eager mode. Integer inputs compute in the default float dtype, as in PyTorch.
"""
import math

from . import backend
from .backend import dtypes as _dt
from .rules import fft as F
from .runtime.creation import tensor as _tensor
from .runtime.tensor import Tensor, wrap_dim

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "hfft2", "ihfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn",
           "fftshift", "ifftshift", "fftfreq", "rfftfreq"]


def _input(x, name, real):
    if not isinstance(x, Tensor) and not getattr(x, "is_traced_tensor", False):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
    if real and x.dtype.is_complex:
        raise RuntimeError(_REAL_ONLY.get(name, "{name} expects a real input tensor, but got {dtype}")
                           .format(name=name, dtype=x.dtype.scalar_name))
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        return x.to(_dt.get_default_dtype())
    return x


# PyTorch's words for a complex input to a real-input transform, where they differ.
_REAL_ONLY = {"rfft2": "rfftn expects a real-valued input tensor, but got {dtype}",
              "rfftn": "rfftn expects a real-valued input tensor, but got {dtype}",
              "ihfft2": "Only supports floating-point dtypes, but found: {dtype}",
              "ihfftn": "Only supports floating-point dtypes, but found: {dtype}"}


def _norm(norm):
    if norm is None:
        return "backward"
    if norm not in F.NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return norm


def _dims(x, dim, s):
    if dim is None:
        if s is not None and len(s) > x.ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {x.ndim} dimensions.")
        return None
    dims = tuple(wrap_dim(d, x.ndim) for d in ((dim,) if isinstance(dim, int) else dim))
    if len(set(dims)) != len(dims):
        raise RuntimeError("FFT dims must be unique")
    if s is not None and len(s) != len(dims):
        raise RuntimeError("When given, dim and shape arguments must have the same length")
    return dims


def _transform(how, *, c2r=False, real=False, **direction):
    """The body every transform shares, from its arguments in ``*fftn`` form."""
    def run(name, input, s, dim, norm, out):
        if out is not None:
            raise NotImplementedError(f"tracegrad's torch.fft.{name} does not take out=")
        x = _input(input, name, real)
        s = None if s is None else tuple(int(n) for n in s)
        try:
            sizes, dims = F.plan(x.shape, s, _dims(x, dim, s), c2r=c2r)
        except F.LengthError as e:
            raise RuntimeError(f"Invalid number of data points ({e.n}) specified") from None
        return how(x, sizes=sizes, dims=dims, norm=_norm(norm), **direction)
    return run


def _named(fn, name):
    fn.__name__ = fn.__qualname__ = name
    return fn


def _family(stem, run):
    """``stem``, ``stem2`` and ``stemn`` with PyTorch's signatures over one body."""
    def one(input, n=None, dim=-1, norm=None, *, out=None):
        return run(stem, input, None if n is None else (n,), (dim,), norm, out)

    def two(input, s=None, dim=(-2, -1), norm=None, *, out=None):
        return run(stem + "2", input, s, dim, norm, out)

    def nd(input, s=None, dim=None, norm=None, *, out=None):
        return run(stem + "n", input, s, dim, norm, out)
    return _named(one, stem), _named(two, stem + "2"), _named(nd, stem + "n")


fft, fft2, fftn = _family("fft", _transform(F.fftn, forward=True))
ifft, ifft2, ifftn = _family("ifft", _transform(F.fftn, forward=False))
rfft, rfft2, rfftn = _family("rfft", _transform(F.rfftn, real=True))
irfft, irfft2, irfftn = _family("irfft", _transform(F.irfftn, c2r=True))
hfft, hfft2, hfftn = _family("hfft", _transform(F.irfftn, c2r=True, forward=True))
ihfft, ihfft2, ihfftn = _family("ihfft", _transform(F.rfftn, real=True, forward=False))


def _shift(inverse, name):
    def call(input, dim=None):
        dims = tuple(range(input.ndim)) if dim is None else tuple(
            wrap_dim(d, input.ndim) for d in ((dim,) if isinstance(dim, int) else dim))
        return F.shift(input, dims, inverse=inverse)
    return _named(call, name)


fftshift = _shift(False, "fftshift")
ifftshift = _shift(True, "ifftshift")


def _freq(name):
    def call(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
        dtype = _dt.get_default_dtype() if dtype is None else _dt.as_dtype(dtype)
        xp = backend.namespace_for(device)
        # PyTorch's arithmetic: the integer frequencies times 1 / (n d), in the result's dtype
        if name == "fftfreq":
            ints = xp.concatenate([xp.arange((n - 1) // 2 + 1), xp.arange(-(n // 2), 0)])
        else:
            ints = xp.arange(n // 2 + 1)
        values = ints.astype(dtype.np) * dtype.np.type(1.0 / (n * d) if n else math.inf)  # (n = 0: nan, as PyTorch)
        result = _tensor(values, requires_grad=requires_grad)
        if out is not None:
            out.copy_(result)  # (with out's own shape checks)
            return out
        return result
    return _named(call, name)


fftfreq = _freq("fftfreq")
rfftfreq = _freq("rfftfreq")
