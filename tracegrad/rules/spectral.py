"""Spectral decompositions: eigh, eig, svd (stacked ``...xMxN`` operands).

Derivatives: the eigenvector and singular-vector terms divide by gaps between eigenvalues
(``1 / (w_j - w_i)``, ``1 / (s_j^2 - s_i^2)``: Giles 2008, Townsend's SVD notes,
Boeddeker et al. 2017 for eig) and, for a non-square SVD, by the singular values. Where a
gap is exactly zero (repeated eigen/singular values) the vectors are not functions of
the input and their gradient is undefined: the term is 0 when what it divides is
exactly 0 -- a loss of the eigen/singular values alone, or of the vectors' span -- and
nan otherwise (PyTorch gives inf/nan there too). So ``eigvalsh``, ``svdvals`` and the
nuclear norm keep finite gradients at repeated values.

Conventions, each chosen so that a vjp is the derivative of its kernel:

* eigh reads one triangle of its operand (``upper``), so its gradient lives on that
  triangle (see :mod:`tracegrad.rules.decomp`).
* svd with ``full_matrices=True`` ignores the gradient of the ``max(m, n) - min(m, n)``
  extra columns of U (rows of Vh), an arbitrary basis of a complement, as PyTorch does.
* Complex eigenvectors and singular vectors are defined up to a phase each; the
  derivatives hold the phase of each vector's largest entry (of each column of U). eig's
  kernel answers LAPACK's vectors, whose largest entry is real: the derivative is that of
  the kernel, for every loss. LAPACK's eigh and svd follow no such rule, so their kernels
  turn each vector to make its largest entry real and positive (the canonical phase,
  whose derivative is exact for every loss); the front ends (``eigh_as_lapack``,
  ``svd_as_lapack``) turn the vectors back to LAPACK's phases -- NumPy's and PyTorch's
  values -- by a constant factor, so their derivatives are exact for losses that do not
  depend on the phases (the only ones with a meaning; PyTorch refuses the others). eig
  always answers complex values, even for real input (as PyTorch). Real eigh and svd keep
  LAPACK's signs.
"""
import math

from .arith import where
from .complex_ import conj_of, imag, is_complex, real, real_of
from .core import FLOAT, primitive
from .decomp import (
    columns,
    diag_embed,
    diag_part,
    halved_triangle,
    hermitian_from_triangle,
    inv,
    mH,
    mT,
    rows,
    solve,
)
from .index import zeros_of
from .linalg import eye_of, matmul
from .reduce import amax, cumsum, sum
from .shape import cat, unsqueeze
from .unary import abs

__all__ = ["eig", "eigh", "eigh_as_lapack", "lapack_phases", "singular_values", "svd", "svd_as_lapack"]


def _row(v):
    """``(..., n)`` as ``(..., 1, n)``: scales the columns of a matrix."""
    return unsqueeze(v, dim=v.ndim - 1)


def _col(v):
    """``(..., n)`` as ``(..., n, 1)``: scales the rows of a matrix."""
    return unsqueeze(v, dim=v.ndim)


def _gaps(w):
    """``E[i, j] = w_j - w_i``."""
    return _row(w) - _col(w)


def _ratio(num, den):
    """``num / den``; where ``den`` is 0: 0 if ``num`` is exactly 0 too, else nan (the
    derivative is undefined there)."""
    zero = den == 0
    return where(zero & (num != 0), math.nan, where(zero, 0.0, num / where(zero, 1.0, den)))


def _gap_ratio(num, gaps):
    """``num_ij / gaps_ij`` off the diagonal (as ``_ratio``), 0 on it."""
    return _ratio(num * (1.0 - eye_of(gaps, n=gaps.shape[-1])), gaps)


def _off_diagonal_inverse(gaps):
    """``1 / gaps`` off the diagonal, 0 on it, nan at exact ties (for the jvps)."""
    ones = 1.0 - eye_of(gaps, n=gaps.shape[-1])
    return _ratio(ones, gaps)


def _sum_rows(m):
    return sum(m, dim=(m.ndim - 2,))


# -- the phase of complex vectors --------------------------------------------------------------------

def fix_phases(xp, v):
    """``(v e^{-i theta}, e^{i theta})``: each column of ``v`` turned so that its largest entry
    (the first, at ties) is real and positive."""
    if v.shape[-2] == 0:
        return v, xp.ones(v.shape[:-2] + v.shape[-1:], v.dtype)
    top = xp.take_along_axis(v, xp.argmax(xp.abs(v), axis=-2)[..., None, :], axis=-2)[..., 0, :]
    size = xp.abs(top)
    phase = xp.where(size == 0, 1, top / xp.where(size == 0, 1, size))
    return v * xp.conj(phase)[..., None, :], phase


def _largest(v):
    """A mask of each column's largest entry (the first at ties, as ``fix_phases``), and
    that entry (1 for a zero column)."""
    mags = abs(v)
    is_top = mags == amax(mags, dim=(v.ndim - 2,), keepdim=True)
    first = is_top & (cumsum(where(is_top, 1, 0), dim=v.ndim - 2) == 1)
    top = _sum_rows(where(first, v, 0.0))
    return first, where(top == 0, 1.0, top)


def _phase_tangent(dv, v):
    """The phase correction of a tangent: ``c = Im(dv_p / v_p)`` per column (p its largest
    entry), which ``dv - i v diag(c)`` takes away so that ``v_p`` keeps its phase."""
    if v.shape[-2] == 0:
        return imag(_sum_rows(dv))
    mask, top = _largest(v)
    return imag(_sum_rows(where(mask, dv, 0.0)) / top)


def _phase_cotangent(h, v):
    """The transpose of ``_phase_tangent`` applied to a per-column cotangent ``h``."""
    if v.shape[-2] == 0:
        return v * 0
    mask, top = _largest(v)
    return -1j * where(mask, _row(h) / _row(top), 0.0)


@primitive(dtypes=FLOAT)
def lapack_phases(xp, x, *, kind, upper=False, full_matrices=True):
    """The phases ``e^{i theta}`` that turn the canonical vectors of ``eigh`` (``kind``
    "eigh": its columns) or ``svd`` ("svd_u": U's columns, "svd_vh": Vh's rows; 1 beyond
    ``min(m, n)``) into LAPACK's, which NumPy and PyTorch answer. Not differentiable -- a
    constant of ``x`` -- so a front end that multiplies by it answers LAPACK's values with
    the canonical vectors' derivatives (exact for every loss that does not depend on the
    phases)."""
    if kind == "eigh":
        return fix_phases(xp, xp.linalg.eigh(x, UPLO="U" if upper else "L")[1])[1]
    u, _, vh = xp.linalg.svd(x, full_matrices=full_matrices)
    k = min(x.shape[-2], x.shape[-1])
    phase = fix_phases(xp, u[..., :k])[1]
    phase, size = (phase, u.shape[-1]) if kind == "svd_u" else (xp.conj(phase), vh.shape[-2])
    return xp.concatenate([phase, xp.ones(phase.shape[:-1] + (size - k,), phase.dtype)], axis=-1)


def eigh_as_lapack(x, upper=False):
    """``eigh`` with LAPACK's phases (NumPy's and PyTorch's values)."""
    w, v = eigh(x, upper=upper)
    if is_complex(v):
        v = v * _row(lapack_phases(x, kind="eigh", upper=upper))
    return w, v


def svd_as_lapack(x, full_matrices=True):
    """``svd`` with LAPACK's phases (NumPy's and PyTorch's values)."""
    u, s, vh = svd(x, full_matrices=full_matrices)
    if is_complex(u):
        u = u * _row(lapack_phases(x, kind="svd_u", full_matrices=full_matrices))
        vh = vh * _col(lapack_phases(x, kind="svd_vh", full_matrices=full_matrices))
    return u, s, vh


# -- eigh -----------------------------------------------------------------------------------------

@primitive("LinalgEighBackward0", dtypes=FLOAT, nout=2, result_names=("eigenvalues", "eigenvectors"),
           complex=True)
def eigh(xp, x, *, upper=False):
    """Eigenvalues (ascending) and eigenvectors of the Hermitian matrix held in the lower
    (``upper``: upper) triangle of ``x``."""
    w, v = xp.linalg.eigh(x, UPLO="U" if upper else "L")
    if v.dtype.kind == "c":
        v = fix_phases(xp, v)[0]
    return w, v


@eigh.vjp("x", uses="out")
def eigh_vjp(g, out, x, *, upper=False):
    (gw, gv), (w, v) = g, out
    if is_complex(v):
        gv = gv + _phase_cotangent(imag(_sum_rows(gv * v)), v)
    j = matmul(mT(v), gv)
    inner = diag_embed(gw) + _gap_ratio(0.5 * (j - mH(j)), _gaps(w))
    herm = matmul(conj_of(v), matmul(inner, mT(v)))  # the gradient for Hermitian perturbations
    return halved_triangle(herm + mH(herm), upper=upper)


@eigh.jvp("x")
def eigh_jvp(t, out, x, *, upper=False):
    w, v = out
    m = matmul(mH(v), matmul(hermitian_from_triangle(t, upper), v))
    dv = matmul(v, m * _off_diagonal_inverse(_gaps(w)))
    if is_complex(v):
        dv = dv - 1j * v * _row(_phase_tangent(dv, v))
    return real_of(diag_part(m)) + 0.0, dv


# -- eig ------------------------------------------------------------------------------------------

@primitive("LinalgEigBackward0", dtypes=FLOAT, nout=2, result_names=("eigenvalues", "eigenvectors"),
           complex=True)
def eig(xp, x):
    """Eigenvalues and unit-norm eigenvectors of a general square matrix, always complex
    (as PyTorch; NumPy answers real arrays when every eigenvalue is real)."""
    w, v = xp.linalg.eig(x)
    dtype = xp.result_type(x.dtype, xp.complex64)
    return w.astype(dtype, copy=False), v.astype(dtype, copy=False)


@eig.vjp("x", uses="x out")
def eig_vjp(g, out, x):
    (gw, gv), (w, v) = g, out
    gv = gv + _phase_cotangent(imag(_sum_rows(gv * v)), v)
    # The unit-norm constraint: dv loses v Re(v^H dv), so gv loses conj(v) Re(sum(gv v)).
    gv = gv - conj_of(v) * _row(real(_sum_rows(gv * v)))
    inner = diag_embed(gw) + _gap_ratio(matmul(mT(v), gv), _gaps(w))
    ga = matmul(mT(inv(v)), matmul(inner, mT(v)))
    return ga if is_complex(x) else real(ga)


@eig.jvp("x")
def eig_jvp(t, out, x):
    w, v = out
    m = matmul(solve(v, t), v)
    dv = matmul(v, m * _off_diagonal_inverse(_gaps(w)))
    dv = dv - v * _row(real(_sum_rows(conj_of(v) * dv)))
    dv = dv - 1j * v * _row(_phase_tangent(dv, v))
    return diag_part(m) + 0.0, dv


# -- svd ------------------------------------------------------------------------------------------

@primitive("LinalgSvdBackward0", dtypes=FLOAT, nout=3, result_names=("U", "S", "Vh"), complex=True)
def svd(xp, x, *, full_matrices=True):
    """``(U, S, Vh)`` with ``x = U diag(S) Vh`` and S descending."""
    u, s, vh = xp.linalg.svd(x, full_matrices=full_matrices)
    if u.dtype.kind == "c" and s.shape[-1]:
        k = s.shape[-1]
        fixed, phase = fix_phases(xp, u[..., :k])
        u = xp.concatenate([fixed, u[..., k:]], axis=-1)
        vh = xp.concatenate([vh[..., :k, :] * phase[..., :, None], vh[..., k:, :]], axis=-2)
    return u, s, vh


def _reduced(u, vh, x, full_matrices):
    """The first ``min(m, n)`` columns of U and rows of Vh (all of them unless full)."""
    m, n = x.shape[-2], x.shape[-1]
    k = min(m, n)
    if full_matrices and m != n:
        return columns(u, 0, k), rows(vh, 0, k)
    return u, vh


@svd.vjp("x", uses="out")
def svd_vjp(g, out, x, *, full_matrices=True):
    (gu, gs, gvh), (u, s, vh) = g, out
    u, vh = _reduced(u, vh, x, full_matrices)
    gu, gvh = _reduced(gu, gvh, x, full_matrices)
    m, n, k = x.shape[-2], x.shape[-1], s.shape[-1]
    cplx = is_complex(u)
    if cplx:  # the phase of U's columns moves Vh's rows too: U e^{-ic}, e^{ic} Vh
        h = imag(_sum_rows(gu * u)) - imag(sum(gvh * vh, dim=(vh.ndim - 1,)))
        gu = gu + _phase_cotangent(h, u)
    v_t = conj_of(vh)                                 # V^T
    j, kv = matmul(mT(u), gu), matmul(v_t, mH(gvh))   # U^T gU, V^T gV (gV = gVh^H)
    gaps = _gaps(s * s)
    inner = diag_embed(gs) + _gap_ratio(j - mH(j), gaps) * _row(s) + _col(s) * _gap_ratio(kv - mH(kv), gaps)
    if cplx:  # the imaginary part of U^H dA V's diagonal turns U's phases against V's
        inner = inner + diag_embed(1j * _ratio(imag(diag_part(j)), s))
    ga = matmul(conj_of(u), matmul(inner, v_t))
    if m > k:  # (I - U U^H) gU S^{-1} V^H, transposed
        ga = ga + matmul(_ratio(gu - matmul(conj_of(u), j), _row(s)), v_t)
    if n > k:  # U S^{-1} gV^H (I - V V^H), transposed
        ga = ga + matmul(conj_of(u), _ratio(gvh - matmul(mH(kv), v_t), _col(s)))
    return ga if is_complex(x) else real_of(ga)


@svd.jvp("x")
def svd_jvp(t, out, x, *, full_matrices=True):
    u, s, vh = out
    u, vh = _reduced(u, vh, x, full_matrices)
    v, m, n, k = mH(vh), x.shape[-2], x.shape[-1], s.shape[-1]
    dp = matmul(mH(u), matmul(t, v))                 # U^H dA V
    f = _off_diagonal_inverse(_gaps(s * s))
    omega_u = f * (dp * _row(s) + _col(s) * mH(dp))
    omega_v = f * (_col(s) * dp + mH(dp) * _row(s))
    if is_complex(u):
        omega_u = omega_u + diag_embed(1j * _ratio(imag(diag_part(dp)), s))
    du, dv = matmul(u, omega_u), matmul(v, omega_v)
    if m > k:
        du = du + _ratio(matmul(t, v) - matmul(u, dp), _row(s))
    if n > k:
        dv = dv + _ratio(matmul(mH(t), u) - matmul(v, mH(dp)), _row(s))
    dvh = mH(dv)
    if is_complex(u):
        c = _phase_tangent(du, u)
        du, dvh = du - 1j * u * _row(c), dvh + 1j * _col(c) * vh
    if full_matrices and m != n:  # the extra columns take no part (see svd_vjp)
        lead = tuple(x.shape[:-2])
        du = cat(du, zeros_of(du, shape=lead + (m, m - k)), dim=du.ndim - 1)
        dvh = cat(dvh, zeros_of(dvh, shape=lead + (n - k, n)), dim=dvh.ndim - 2)
    return du, real_of(diag_part(dp)) + 0.0, dvh


def singular_values(a):
    """The singular values, descending (``svdvals``)."""
    return svd(a, full_matrices=False)[1]
