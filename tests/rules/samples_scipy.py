"""Samples for the rules behind ``tracegrad.scipy``'s linalg, signal and stats modules
(tracegrad/rules/scipy_linalg.py, scipy_signal.py, scipy_stats.py): triangular, banded
and Sylvester solves, sqrtm, expm, n-d convolution and Student's t distribution function.
Matrices are kept well conditioned (and, for sqrtm, with eigenvalues away from the
negative axis) so that finite differences are accurate to second order; the triangle a
triangular solve does not read holds noise, to prove that its gradient stays off it."""
import numpy as np

from .sampling import S

_rng = np.random.default_rng(1717)  # (its own stream: samples do not move when other modules draw)


def r(*shape):
    return _rng.standard_normal(shape)


def c(*shape):
    return r(*shape) + 1j * r(*shape)


def invertible(*shape, draw=r):
    return draw(*shape) + 3 * np.eye(shape[-1])


def positive_spectrum(*shape, draw=r):
    """Matrices with eigenvalues 1..n (and, complex, a positive real part) in a random basis."""
    n = shape[-1]
    p = invertible(*shape, draw=draw)
    return (p * np.arange(1.0, n + 1)[..., None, :]) @ np.linalg.inv(p)


def rotation_like(n):
    """A real matrix with eigenvalues in complex pairs (3 +- i, ...): its square root is real."""
    blocks = np.zeros((n, n))
    for k in range(0, n - 1, 2):
        blocks[k:k + 2, k:k + 2] = [[3.0 + k, -1.0], [1.0, 3.0 + k]]
    if n % 2:
        blocks[-1, -1] = 2.0
    p = invertible(n, n)
    return p @ blocks @ np.linalg.inv(p)


def banded(l, u, m, draw=r):
    """SciPy's band layout ``(l + u + 1, m)`` of a diagonally dominant matrix."""
    ab = 0.5 * draw(l + u + 1, m)
    ab[u] += 4.0
    return ab


_MATRICES = "operands are (stacks of) square matrices"
_BAND = "SciPy's band layout: ab is (l + u + 1) x M, b is M x K"

SAMPLES = {
    "solve_triangular": [
        S(invertible(3, 3), r(3, 2)), S(invertible(3, 3), r(3, 2), lower=True),
        S(invertible(3, 3), r(3, 1), trans=1), S(invertible(3, 3), r(3, 2), lower=True, trans=2),
        S(invertible(4, 4), r(4, 2), unit_diagonal=True), S(invertible(3, 3), r(3, 2), lower=True, trans=1,
                                                            unit_diagonal=True),
        S(invertible(2, 3, 3), r(2, 3, 2), lower=True), S(invertible(2, 3, 3), r(3, 2), tags="broadcast"),
        S(invertible(3, 3), r(2, 3, 1), trans=1, tags="broadcast"), S(invertible(1, 1), r(1, 1)),
        S(invertible(0, 0), r(0, 2), tags="empty"), S(invertible(3, 3), r(3, 0), lower=True, tags="empty")],
    "solve_sylvester": [
        S(invertible(3, 3), invertible(2, 2), r(3, 2)), S(invertible(3, 3), invertible(3, 3), r(3, 3)),
        S(invertible(2, 3, 3), invertible(2, 2, 2), r(2, 3, 2)),
        S(invertible(3, 3), invertible(2, 2, 2), r(3, 2), tags="broadcast"),
        S(invertible(1, 1), invertible(1, 1), r(1, 1)),
        S(invertible(0, 0), invertible(2, 2), r(0, 2), tags="empty")],
    "sqrtm": [S(positive_spectrum(3, 3)), S(positive_spectrum(2, 3, 3)), S(rotation_like(4)),
              S(np.array([[2.5]])), S(r(0, 0), tags="empty"), S(r(2, 0, 0), tags="empty")],
    "expm": [S(0.5 * r(3, 3)), S(0.5 * r(2, 4, 4)), S(r(1, 1)), S(r(0, 0), tags="empty"),
             S(r(3, 0, 0), tags="empty")],
    "solve_banded": [S(banded(1, 1, 5), r(5, 2), l=1, u=1), S(banded(2, 1, 6), r(6, 3), l=2, u=1),
                     S(banded(0, 2, 4), r(4, 1), l=0, u=2), S(banded(0, 0, 3), r(3, 2), l=0, u=0),
                     S(banded(1, 0, 1), r(1, 1), l=1, u=0),
                     S(banded(1, 1, 4), r(4, 0), l=1, u=1, tags="empty")],
    "convolve": [S(r(5), r(3)), S(r(5), r(3), mode="valid"), S(r(2), r(4)),
                 S(r(4, 3), r(2, 2)), S(r(4, 3), r(2, 3), mode="valid"), S(r(3, 2, 4), r(2, 2, 2)),
                 S(r(5, 4), r(3, 2), method="direct"), S(r(6), r(4), mode="valid", method="fft"),
                 S(np.array(r()), np.array(r()), tags="0d")],
    # (at t = 0 SciPy's stdtr is accurate to ~1e-11 only: finite differences to ~1e-5)
    "stdtr": [S(3, r(3, 4)), S(1, np.array([-2.0, 0.0, 0.5, 3.0]), rtol=1e-4),
              S(np.array([1, 4, 7, 30]), r(3, 4), float32=False, tags="broadcast"),
              S(5, np.array(r()), tags="0d"), S(2, r(0, 3), tags="empty")],
}

EXEMPT = {name: {"0d": _MATRICES} for name in ("solve_triangular", "solve_sylvester", "sqrtm", "expm")}
EXEMPT["solve_banded"] = {"0d": _BAND}
EXEMPT["convolve"] = {"empty": "SciPy's convolve refuses empty operands (tracegrad.scipy.signal too)"}

# Their kernels are SciPy's: tests/conftest.py skips their walks without SciPy.
SCIPY_RULES = {"solve_sylvester", "sqrtm", "expm", "solve_banded", "convolve", "stdtr"}


# -- complex samples (walked by test_complex_table.py) ------------------------------------------

def c_invertible(*shape):
    return invertible(*shape, draw=c)


COMPLEX_SAMPLES = {
    "solve_triangular": [S(c_invertible(3, 3), c(3, 2)), S(c_invertible(3, 3), c(3, 2), lower=True, trans=1),
                         S(c_invertible(3, 3), c(3, 2), trans=2), S(c_invertible(2, 3, 3), r(3, 2), lower=True,
                                                                    trans=2, unit_diagonal=True),
                         S(invertible(3, 3), c(3, 1), trans=2)],
    "solve_sylvester": [S(c_invertible(3, 3), c_invertible(2, 2), c(3, 2)),
                        S(invertible(3, 3), c_invertible(3, 3), r(3, 3))],
    "sqrtm": [S(positive_spectrum(3, 3, draw=c)), S(positive_spectrum(2, 2, 2, draw=c)),
              S(np.array([[-2.0, 0.5], [0.3, 1.5]])), S(-positive_spectrum(3, 3))],
    "expm": [S(0.5 * c(3, 3)), S(0.5 * c(2, 3, 3))],
    "solve_banded": [S(banded(1, 1, 5, draw=c), c(5, 2), l=1, u=1), S(banded(2, 1, 5), c(5, 1), l=2, u=1)],
    "convolve": [S(c(5), c(3)), S(c(4, 3), r(2, 2), mode="valid"), S(r(3, 3), c(2, 3))],
}


# -- PyTorch's equivalents (walked by test_oracle_table.py) ----------------------------------------

def _torch():
    import torch
    return torch


def _torch_solve_triangular(a, b, lower=False, trans=0, unit_diagonal=False):
    torch = _torch()
    t, upper = (torch.tril(a) if lower else torch.triu(a)), not lower
    if trans:
        t, upper = (t.mT.conj() if trans == 2 else t.mT), lower
    return torch.linalg.solve_triangular(t, b, upper=upper, unitriangular=unit_diagonal)


def _torch_convolve(in1, in2, mode="full", method="auto"):
    """SciPy's convolution as PyTorch's cross-correlation with the kernel flipped."""
    torch = _torch()
    if in1.ndim == 0:
        return in1 * in2
    conv = getattr(torch.nn.functional, f"conv{in1.ndim}d")
    pad = [n - 1 for n in in2.shape] if mode == "full" else 0
    return conv(in1[None, None], in2.flip(tuple(range(in2.ndim)))[None, None], padding=pad)[0, 0]


TORCH = {
    "solve_triangular": _torch_solve_triangular,
    "expm": lambda a: _torch().linalg.matrix_exp(a),
    "convolve": _torch_convolve,
}
NO_TORCH = {
    "solve_sylvester": "PyTorch has no Sylvester solver",
    "sqrtm": "PyTorch has no matrix square root",
    "solve_banded": "PyTorch has no banded solver",
    "stdtr": "PyTorch has no Student's t distribution function",
}
