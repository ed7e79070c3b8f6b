"""Samples for the complex-number rules (real, imag, conj, angle, complex), and the complex
samples of every rule declared right for complex values (``COMPLEX_SAMPLES``, walked by
test_complex_table.py), or the reason its kernel refuses complex operands
(``REFUSES_COMPLEX``)."""
import dataclasses
import importlib.util

import numpy as np

from . import samples_activation, samples_conv, samples_core, samples_linalg, samples_loss, samples_nn
from .sampling import S, _rng, away, r, zd


def c(*shape):
    """Complex values: standard normal real and imaginary parts."""
    return _rng.standard_normal(shape) + 1j * _rng.standard_normal(shape)


def cz():
    return np.array(c(), dtype=np.complex128)


def cunary(domain=c):
    return [S(domain(3, 4)), S(np.array(domain()), tags="0d"), S(domain(0, 3), tags="empty")]


SAMPLES = {
    "real": [S(r(3, 4)), S(zd(), tags="0d"), S(r(0, 3), tags="empty")],
    "conj": [S(r(3, 4)), S(zd(), tags="0d"), S(r(0, 3), tags="empty")],
    "angle": [S(away(3, 4), smooth=False), S(zd(away), tags="0d", smooth=False), S(r(0, 3), tags="empty")],
}
# Rules whose kernel takes complex operands only (no real sample exists).
COMPLEX_ONLY = {"imag": "the imaginary part of a real tensor is refused, as in PyTorch",
                "complex": "its result is complex (real cotangents cannot check it)"}



def complexified(samples, mixed=True):
    """Each real sample with its float operands made complex (imaginary parts drawn like
    the real ones), and -- for several operands -- with only the first one complex, which
    checks that a real operand gets the real part of its gradient."""
    out = []
    for s in samples:
        floats = [i for i, a in enumerate(s.args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
        if not floats:
            continue
        variants = [floats] + ([floats[:1]] if mixed and len(floats) > 1 else [])
        for chosen in variants:
            args = tuple(np.asarray(a + 1j * _rng.standard_normal(a.shape) * 0.5) if i in chosen else a
                         for i, a in enumerate(s.args))
            out.append(dataclasses.replace(s, args=args))
    return out


def _from_real(*names, mixed=True):
    real = {}
    for m in (samples_core, samples_linalg, samples_activation, samples_conv, samples_loss, samples_nn):
        real.update(m.SAMPLES)
    return {n: complexified(real[n], mixed) for n in names}


COMPLEX_SAMPLES = {
    "real": cunary(), "imag": cunary(), "conj": cunary(), "angle": cunary(),
    "complex": [S(r(3, 4), r(3, 4)), S(r(3, 1), r(4), tags="broadcast"), S(zd(), zd(), tags="0d"),
                S(r(0, 4), r(0, 4), tags="empty")],
    "cast": [S(r(3, 4), dtype=np.complex128, src_dtype=np.float64),
             S(c(3, 4), dtype=np.float64, src_dtype=np.complex128),
             S(np.array(c()), dtype=np.float64, src_dtype=np.complex128, tags="0d")],
}
COMPLEX_SAMPLES.update(_from_real(
    # holomorphic elementwise rules: g * f'(z), as written for real numbers
    "neg", "add", "sub", "mul", "div", "pow", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p",
    "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "sigmoid",
    "where", "clone", "abs", "round", "var", "std",
    # linear rules with real coefficients: shapes, indexing, sums
    "sum", "mean", "cumsum", "prod", "cumprod",
    # bilinear products
    "mm", "bmm", "dot", "mv", "matmul", "addmm", "baddbmm", "einsum",
    # linear rules with real coefficients: shapes, views, indexing, copies, pads
    "reshape", "permute", "transpose", "t", "squeeze", "unsqueeze", "broadcast_to", "sum_to", "cat", "stack",
    "split", "unbind", "basic_index", "advanced_index", "index_select", "gather", "scatter", "scatter_add",
    "index_put", "flip", "roll", "repeat", "diagonal", "diagonal_scatter", "tril", "triu", "constant_pad_nd",
    "pad_nd", "pad_nd_backward", "unsafe_view", "masked_fill", "copy", "copy_slices", "fill",
    "to_device",
))
COMPLEX_SAMPLES.update({  # (away from ties: equal real parts order by the imaginary ones)
    name: [S(c(3, 4)), S(c(3, 4), dim=(1,)), S(c(2, 3), dim=(0,), keepdim=True), S(np.array(c()), tags="0d")]
    for name in ("amax", "amin")})
REFUSES_COMPLEX = {
    name: "its kernel refuses complex operands (they have no order), as PyTorch's does"
    for name in ("floor", "ceil", "trunc", "frac", "maximum", "minimum", "remainder", "atan2")
}
if importlib.util.find_spec("scipy") is not None:  # (complex erf is SciPy's kernel)
    COMPLEX_SAMPLES.update(_from_real("erf"))
else:
    REFUSES_COMPLEX["erf"] = "without SciPy, complex erf has no kernel (an ImportError naming the extra)"


def _torch():
    import torch
    return torch


TORCH = {
    "real": lambda x: _torch().real(x), "imag": lambda x: _torch().imag(x),
    "conj": lambda x: _torch().conj(x).resolve_conj(), "angle": lambda x: _torch().angle(x),
    "complex": lambda a, b: _torch().complex(a, b),
}
