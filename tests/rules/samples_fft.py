"""Samples for the FFT rules (tracegrad/rules/fft.py): every direction and ``norm``, odd and
even lengths (the Nyquist bin), one axis and several (the halved axis last or not last),
batched, length-1 and empty-batch shapes.

The FFTs take and give complex values, so most checking happens in the complex walker
(``COMPLEX_SAMPLES``, test_complex_table.py); the real walker sees the rules whose operand
is real (``SAMPLES``), the others are ``COMPLEX_ONLY``."""
from .samples_complex import c
from .sampling import S, r

NORMS = ("backward", "ortho", "forward")
# (operand shape, dims): one axis, several with the halved one last, batched, length 1
LAYOUTS = [((5,), (0,)), ((3, 4), (1,)), ((2, 3, 4), (0, 2)), ((2, 5, 3), (2, 1)), ((1, 1), (0, 1))]
EMPTY = ((0, 4), (1,))


def _grid(make, layouts=LAYOUTS, **extra):
    """One sample per layout, cycling through the norms and both directions."""
    out = []
    for k, (shape, dims) in enumerate(layouts):
        out.append(make(shape, dims, norm=NORMS[k % 3], forward=k % 2 == 0, **extra))
    return out


def _half(shape, dims, n):
    """``shape`` with the last transformed axis holding the ``n // 2 + 1`` bins of length n."""
    s = list(shape)
    s[dims[-1]] = n // 2 + 1
    return tuple(s)


def _c2c(draw):
    def make(shape, dims, tags=(), **p):
        return S(draw(*shape), dims=dims, tags=tags, **p)
    return make


def _r2c(draw, onesided):
    def make(shape, dims, tags=(), **p):
        return S(draw(*shape), dims=dims, onesided=onesided, tags=tags, **p)
    return make


def _r2c_t(draw, onesided):
    def make(shape, dims, tags=(), **p):
        n = shape[dims[-1]]
        return S(draw(*(_half(shape, dims, n) if onesided else shape)), dims=dims, onesided=onesided,
                 n=n, tags=tags, **p)
    return make


def _c2r(draw):
    def make(shape, dims, tags=(), **p):  # the real result has ``shape``
        n = shape[dims[-1]]
        return S(draw(*_half(shape, dims, n)), dims=dims, n=n, tags=tags, **p)
    return make


def _c2r_t(draw):
    def make(shape, dims, tags=(), **p):
        return S(draw(*shape), dims=dims, tags=tags, **p)
    return make


def _with_empty(make):
    return _grid(make) + [make(*EMPTY, norm="ortho", forward=True, tags="empty")]


def _both_sides(make):
    return _with_empty(make(True)) + _grid(make(False), LAYOUTS[:3])


_RESIZE = [((3, 4), (1,), (6,)), ((3, 4), (1,), (2,)), ((3, 4, 5), (0, 2), (1, 7)),
           ((2, 3), (0, 1), (4, 3))]


def _resize(draw):
    return [S(draw(*shape), dims=dims, sizes=sizes) for shape, dims, sizes in _RESIZE] + [
        S(draw(0, 4), dims=(1,), sizes=(2,), tags="empty")]


SAMPLES = {
    "fft_r2c": _both_sides(lambda onesided: _r2c(r, onesided)),
    "fft_c2r_t": _with_empty(_c2r_t(r)),
    "fft_resize": _resize(r),
}

COMPLEX_ONLY = {
    "fft_c2c": "complex in and out (a real input goes through fft_r2c)",
    "fft_c2r": "its operand is a (complex) half spectrum",
    "fft_r2c_t": "its operand is a (complex) spectrum",
}

COMPLEX_SAMPLES = {
    "fft_c2c": _with_empty(_c2c(c)),
    "fft_r2c": SAMPLES["fft_r2c"],
    "fft_r2c_t": _both_sides(lambda onesided: _r2c_t(c, onesided)),
    "fft_c2r": _with_empty(_c2r(c)),
    "fft_c2r_t": SAMPLES["fft_c2r_t"],
    "fft_resize": _resize(c),
}

_AXES = "an FFT transforms at least one axis"
EXEMPT = {name: {"0d": _AXES} for name in ("fft_c2c", "fft_r2c", "fft_r2c_t", "fft_c2r", "fft_c2r_t")}
EXEMPT["fft_resize"] = {"0d": "it resizes at least one axis"}


def _torch():
    import torch
    return torch


_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _t_c2c(x, *, dims, norm, forward):
    fft = _torch().fft
    return (fft.fftn if forward else fft.ifftn)(x, dim=dims, norm=norm)


def _t_r2c(x, *, dims, norm, forward, onesided):
    torch = _torch()
    fft = torch.fft
    if x.numel() == 0:  # (PyTorch's FFT refuses empty inputs: its zeros, kept in the graph)
        shape = list(x.shape)
        if onesided:
            shape[dims[-1]] = shape[dims[-1]] // 2 + 1
        dtype = torch.complex128 if x.dtype == torch.float64 else torch.complex64
        return torch.zeros(shape, dtype=dtype) + 0 * x.sum()
    if not onesided:
        return (fft.fftn if forward else fft.ifftn)(x, dim=dims, norm=norm)
    out = fft.rfftn(x, dim=dims, norm=norm) if forward else fft.ihfftn(x, dim=dims, norm=norm)
    return out.resolve_conj()


def _t_c2r(x, *, dims, norm, forward, n):
    fft = _torch().fft
    sizes = [x.shape[d] for d in dims[:-1]] + [n]
    return (fft.hfftn if forward else fft.irfftn)(x, s=sizes, dim=dims, norm=norm)


TORCH = {"fft_c2c": _t_c2c, "fft_r2c": _t_r2c, "fft_c2r": _t_c2r}
NO_TORCH = {
    "fft_r2c_t": "the transpose of fft_r2c (half of its vjp); tests/ops/test_fft.py compares its results with torch",
    "fft_c2r_t": "the transpose of fft_c2r (half of its vjp); tests/ops/test_fft.py compares its results with torch",
    "fft_resize": "the zero pad or slice of fft's n / s; tests/ops/test_fft.py compares the transforms using it with torch",
}
