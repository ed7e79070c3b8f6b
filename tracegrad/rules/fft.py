"""Discrete Fourier transforms: NumPy's ``numpy.fft`` and PyTorch's ``torch.fft``.

Every FFT is linear, so its jvp is the rule applied to the tangent (``linear=True``) and
its vjp is its transpose. Under the table's bilinear pairing (``Re(sum(ct * t))``, see
:mod:`tracegrad.rules.complex_`) the transposes stay inside a small family, which is why
the family is what the table holds, as PyTorch's ``_fft_c2c`` / ``_fft_r2c`` / ``_fft_c2r``
are (``forward`` picks the sign of the exponent, ``norm`` NumPy's scaling names):

* ``fft_c2c`` (fftn, ifftn): the DFT matrix is symmetric, so the transpose of a
  complex-to-complex FFT is the same FFT, same direction and scaling;
* ``fft_r2c`` (rfftn, ihfft; fftn and ifftn of real input): real in, the first half of the
  spectrum out (``onesided``) or all of it. Its transpose is ``fft_r2c_t``: the half
  spectrum zero-padded to the full length, transformed, and its real part (a real input
  pairs with the real part only);
* ``fft_c2r`` (irfftn; hfft with ``forward``): a half spectrum read as a Hermitian one,
  real out. It weighs each bin it stands for: 1 for the zero bin (and the Nyquist bin of
  an even length), 2 for the others, which stand for their mirror images too; its
  transpose ``fft_c2r_t`` is a real-to-half-spectrum FFT times those weights (and a
  conjugate, for the inverse direction).

Each transpose's own transpose is the rule it came from, so every order of derivative
stays in the family. ``fft_resize`` is NumPy's ``n``/``s``: zero padding or truncation of
the input before the transform; its transpose resizes back.

Below the rules, :func:`fftn`, :func:`rfftn`, :func:`irfftn` and :func:`shift` compose
them into the transforms both front doors (``tracegrad.fft`` and the tape's ``np.fft``)
call, after each has read its own signature into FFT lengths and axes (:func:`plan`).
"""
from .complex_ import is_complex
from .core import KEEP, primitive
from .shape import roll

__all__ = ["fft_c2c", "fft_r2c", "fft_r2c_t", "fft_c2r", "fft_c2r_t", "fft_resize", "NORMS", "LengthError",
           "plan", "fftn", "rfftn", "irfftn", "shift"]

NORMS = ("backward", "ortho", "forward")
_SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}  # the other direction's


def _full(xp, x, dims, norm, forward):
    return (xp.fft.fftn if forward else xp.fft.ifftn)(x, axes=dims, norm=norm)


def _resize(xp, x, dims, sizes):
    """``x`` with each axis ``dims[i]`` cut or zero-padded at the end to ``sizes[i]``."""
    shape = list(x.shape)
    common = [slice(None)] * x.ndim
    for d, s in zip(dims, sizes):
        shape[d] = s
        common[d] = slice(0, min(s, x.shape[d]))
    out = xp.zeros(tuple(shape), x.dtype)
    out[tuple(common)] = x[tuple(common)]
    return out


def _hermitian_weights(xp, n, dim, ndim, dtype):
    """Along ``dim``, how many bins of a length-``n`` spectrum each of its first
    ``n // 2 + 1`` stands for: 1 (the zero bin; the Nyquist bin when ``n`` is even) or 2."""
    w = xp.full(n // 2 + 1, 2.0, dtype)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    return xp.reshape(w, (-1,) + (1,) * (ndim - dim - 1))


# -- the rules -------------------------------------------------------------------------------

@primitive("FftC2CBackward0", dtypes=KEEP, linear=True, complex=True)
def fft_c2c(xp, x, *, dims, norm, forward):
    """The complex FFT of ``x`` along ``dims`` (``forward``: exponent sign -1)."""
    return _full(xp, x, dims, norm, forward)


@fft_c2c.vjp("x")
def fft_c2c_vjp(g, out, x, *, dims, norm, forward):
    return fft_c2c(g, dims=dims, norm=norm, forward=forward)


@primitive("FftR2CBackward0", dtypes=KEEP, linear=True, complex=True)
def fft_r2c(xp, x, *, dims, norm, forward, onesided):
    """The FFT of real ``x``: the first ``n // 2 + 1`` bins along ``dims[-1]`` when
    ``onesided`` (the rest mirror them), else all."""
    if not onesided:
        return _full(xp, x, dims, norm, forward)
    if forward:
        return xp.fft.rfftn(x, axes=dims, norm=norm)
    return xp.conj(xp.fft.rfftn(x, axes=dims, norm=_SWAP[norm]))


@fft_r2c.vjp("x")
def fft_r2c_vjp(g, out, x, *, dims, norm, forward, onesided):
    return fft_r2c_t(g, dims=dims, norm=norm, forward=forward, onesided=onesided, n=x.shape[dims[-1]])


@primitive("FftR2CTransposeBackward0", dtypes=KEEP, linear=True, complex="real")
def fft_r2c_t(xp, g, *, dims, norm, forward, onesided, n):
    """The transpose of ``fft_r2c`` for a real input of length ``n`` along ``dims[-1]``:
    the real part of the same FFT of ``g`` zero-padded to the full spectrum."""
    if onesided:
        g = _resize(xp, g, dims[-1:], (n,))
    return xp.real(_full(xp, g, dims, norm, forward))


@fft_r2c_t.vjp("g")
def fft_r2c_t_vjp(c, out, g, *, dims, norm, forward, onesided, n):
    return fft_r2c(c, dims=dims, norm=norm, forward=forward, onesided=onesided)


@primitive("FftC2RBackward0", dtypes=KEEP, linear=True, complex="real")
def fft_c2r(xp, x, *, dims, norm, forward, n):
    """The real signal, ``n`` long along ``dims[-1]``, whose spectrum's first ``n // 2 + 1``
    bins there are ``x`` (``x`` must have that many; imaginary parts the Hermitian symmetry
    forbids, as at the zero bin, are ignored). ``forward`` is NumPy's ``hfft``."""
    sizes = [x.shape[d] for d in dims[:-1]] + [n]
    if forward:
        return xp.fft.irfftn(xp.conj(x), s=sizes, axes=dims, norm=_SWAP[norm])
    return xp.fft.irfftn(x, s=sizes, axes=dims, norm=norm)


@fft_c2r.vjp("x")
def fft_c2r_vjp(g, out, x, *, dims, norm, forward, n):
    return fft_c2r_t(g, dims=dims, norm=norm, forward=forward)


@primitive("FftC2RTransposeBackward0", dtypes=KEEP, linear=True, complex=True)
def fft_c2r_t(xp, g, *, dims, norm, forward):
    """The transpose of ``fft_c2r``: the half spectrum of real ``g`` in ``fft_c2r``'s
    direction and scaling, each bin weighed by how many bins it stands for."""
    if forward:
        half = xp.fft.rfftn(g, axes=dims, norm=norm)
    else:
        half = xp.conj(xp.fft.rfftn(g, axes=dims, norm=_SWAP[norm]))
    d = dims[-1]
    return half * _hermitian_weights(xp, g.shape[d], d, g.ndim, g.dtype)


@fft_c2r_t.vjp("g")
def fft_c2r_t_vjp(c, out, g, *, dims, norm, forward):
    return fft_c2r(c, dims=dims, norm=norm, forward=forward, n=g.shape[dims[-1]])


def _resize_name(args, params):
    shape = args[0].shape
    grows = all(s >= shape[d] for d, s in zip(params["dims"], params["sizes"]))
    return "ConstantPadNdBackward0" if grows else "SliceBackward0"


@primitive(_resize_name, dtypes=KEEP, linear=True, complex=True)
def fft_resize(xp, x, *, dims, sizes):
    """``x`` with each axis ``dims[i]`` cut or zero-padded at the end to ``sizes[i]``: the
    ``n`` and ``s`` arguments of NumPy's and PyTorch's FFTs."""
    return _resize(xp, x, dims, sizes)


@fft_resize.vjp("x")
def fft_resize_vjp(g, out, x, *, dims, sizes):
    return fft_resize(g, dims=dims, sizes=tuple(x.shape[d] for d in dims))


# -- the transforms the front doors call ---------------------------------------------------

class LengthError(ValueError):
    """An FFT length below 1 (``n``); each front door words it as its library does."""

    def __init__(self, n):
        super().__init__(f"Invalid number of FFT data points ({n}) specified.")
        self.n = n


def plan(shape, s, dims, *, c2r=False):
    """FFT lengths and axes from a front door's ``s`` (None, or lengths with -1 for "the
    input's") and ``dims`` (None, or axes already made non-negative and checked unique):
    all axes by default, the last ``len(s)`` when only ``s`` is given. ``c2r``: the last
    length defaults to the Hermitian signal's, ``2 * (m - 1)``. Raises ValueError for a
    length below 1 (:class:`LengthError`) or an ``s`` and ``dims`` of different lengths."""
    if dims is None:
        dims = tuple(range(len(shape))) if s is None else tuple(range(len(shape) - len(s), len(shape)))
    dims = tuple(dims)
    if s is None:
        s = (-1,) * len(dims)
    if len(s) != len(dims):
        raise ValueError(f"When given, axes and shape arguments have to be of the same length "
                         f"(got {len(s)} lengths for {len(dims)} axes)")
    sizes = []
    for i, (d, n) in enumerate(zip(dims, s)):
        n = int(n)
        if n == -1:
            n = 2 * (shape[d] - 1) if c2r and i == len(dims) - 1 else shape[d]
        if n < 1:
            raise LengthError(n)
        sizes.append(n)
    return tuple(sizes), dims


def _resized(x, dims, sizes):
    if all(x.shape[d] == s for d, s in zip(dims, sizes)):
        return x
    return fft_resize(x, dims=tuple(dims), sizes=tuple(sizes))


def fftn(x, *, sizes, dims, norm, forward):
    """``numpy.fft.fftn`` (``forward``) or ``ifftn`` of ``x`` resized to ``sizes``."""
    x = _resized(x, dims, sizes)
    if is_complex(x):
        return fft_c2c(x, dims=dims, norm=norm, forward=forward)
    return fft_r2c(x, dims=dims, norm=norm, forward=forward, onesided=False)


def rfftn(x, *, sizes, dims, norm, forward=True):
    """``numpy.fft.rfftn`` of real ``x`` resized to ``sizes`` (``forward=False``: the
    inverse direction, ``ihfft``)."""
    return fft_r2c(_resized(x, dims, sizes), dims=dims, norm=norm, forward=forward, onesided=True)


def irfftn(x, *, sizes, dims, norm, forward=False):
    """``numpy.fft.irfftn`` (``forward=True``: ``hfft``): the real signal of lengths
    ``sizes`` whose half spectrum is ``x`` (resized to ``sizes[-1] // 2 + 1`` bins)."""
    x = _resized(x, dims, sizes[:-1] + (sizes[-1] // 2 + 1,))
    return fft_c2r(x, dims=dims, norm=norm, forward=forward, n=sizes[-1])


def shift(x, dims, inverse=False):
    """``fftshift`` (the zero bin to the middle of each axis of ``dims``) or, ``inverse``,
    ``ifftshift``: rolls, so the roll rule differentiates them."""
    n = [x.shape[d] for d in dims]
    return roll(x, shifts=tuple(-(k // 2) if inverse else k // 2 for k in n), dims=tuple(dims))
