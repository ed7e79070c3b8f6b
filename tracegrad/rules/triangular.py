"""The LU factorisation: ``lu_factor`` (LAPACK's packed ``LU`` with its pivots) and
``lu_permute`` (the row permutation ``P`` or ``P^T`` the pivots stand for), the
primitives ``torch.linalg``'s lu family is written with, together with the triangular
solve of :mod:`.scipy_linalg`.

``lu_factor``'s derivatives are PyTorch's (``linalg_lu_backward`` / ``linalg_lu_jvp``:
square, wide and tall), written with ``solve_triangular`` so that they differentiate
again. Both are holomorphic, so in JAX's convention their rules hold for complex values
as written (transposes, no conjugates).
"""
from . import lapack
from .core import FLOAT, KEEP, primitive
from .decomp import columns, mT, rows, shaped_like
from .linalg import eye_of, matmul
from .scipy_linalg import solve_triangular
from .shape import cat, tril, triu

__all__ = ["lu_factor", "lu_permute", "unpack"]


# -- the pivots' permutation ------------------------------------------------------------------------

@primitive("LinalgLuPermuteBackward0", dtypes=KEEP, linear=True, complex=True)
def lu_permute(xp, x, pivots, *, transpose=False):
    """``P x`` (``transpose``: ``P^T x``) for the ``P`` of ``A = P L U`` that LAPACK's
    ``pivots`` stand for; batch dims broadcast."""
    m = x.shape[-2]
    perm = lapack.permutation(xp, pivots, m)
    batch = xp.broadcast_shapes(x.shape[:-2], perm.shape[:-1])
    x = xp.broadcast_to(x, batch + x.shape[-2:])
    perm = xp.broadcast_to(perm, batch + (m,))
    if not transpose:  # P^T x = x[perm], so P x = x[perm^-1]
        perm = xp.argsort(perm, axis=-1)
    return xp.take_along_axis(x, perm[..., None], axis=-2)


@lu_permute.vjp("x", uses="pivots")
def lu_permute_vjp(g, out, x, pivots, *, transpose=False):
    return shaped_like(lu_permute(g, pivots, transpose=not transpose), x.shape)


# -- lu_factor -----------------------------------------------------------------------------------

@primitive("LinalgLuFactorExBackward0", dtypes=FLOAT, nout=2, result_names=("LU", "pivots"), complex=True)
def lu_factor(xp, a):
    """``(LU, pivots)``: LAPACK's getrf with partial pivoting (see :mod:`.lapack`)."""
    return lapack.lu_factor(xp, a)


def unpack(lu):
    """``(L, U)`` from a packed ``LU`` (``m x k`` unit lower, ``k x n`` upper), differentiably."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    low = tril(columns(lu, 0, k), diagonal=-1) + columns(eye_of(lu, n=m), 0, k)
    return low, triu(rows(lu, 0, k))


def _lt_solve(low, m):
    """``L^{-T} m`` for unit-lower ``L``."""
    return solve_triangular(low, m, lower=True, trans=1, unit_diagonal=True)


def _right_ut_solve(m, up):
    """``m U^{-T}`` for upper ``U``."""
    return mT(solve_triangular(up, mT(m)))


def _l_solve(low, m):
    """``L^{-1} m`` for unit-lower ``L``."""
    return solve_triangular(low, m, lower=True, unit_diagonal=True)


def _right_u_solve(m, up):
    """``m U^{-1}`` for upper ``U``."""
    return mT(solve_triangular(up, mT(m), trans=1))


@lu_factor.vjp("a", uses="out")
def lu_factor_vjp(g, out, a):
    """gA = P L^{-T} [tril(L^T gL, -1) + triu(gU U^T)] U^{-T} for square ``A``; a wide
    ``A`` adds the part of U beyond the square, a tall one the part of L below it."""
    (g_lu, _), (lu, pivots) = g, out
    m, n = lu.shape[-2:]
    k = min(m, n)
    low, up = unpack(lu)
    g_low, g_up = tril(columns(g_lu, 0, k), diagonal=-1), triu(rows(g_lu, 0, k))
    if m == n:
        inner = tril(matmul(mT(low), g_low), diagonal=-1) + triu(matmul(g_up, mT(up)))
        grad = _lt_solve(low, _right_ut_solve(inner, up))
    elif m < n:
        up1, up2, g_up1, g_up2 = columns(up, 0, k), columns(up, k), columns(g_up, 0, k), columns(g_up, k)
        inner = (tril(matmul(mT(low), g_low) - matmul(g_up2, mT(up2)), diagonal=-1)
                 + triu(matmul(g_up1, mT(up1))))
        grad = cat(_lt_solve(low, _right_ut_solve(inner, up1)), _lt_solve(low, g_up2), dim=lu.ndim - 1)
    else:
        low1, low2, g_low1, g_low2 = rows(low, 0, k), rows(low, k), rows(g_low, 0, k), rows(g_low, k)
        inner = (tril(matmul(mT(low1), g_low1), diagonal=-1)
                 + triu(matmul(g_up, mT(up)) - matmul(mT(low2), g_low2)))
        grad = cat(_lt_solve(low1, _right_ut_solve(inner, up)), _right_ut_solve(g_low2, up), dim=lu.ndim - 2)
    return lu_permute(grad, pivots)


@lu_factor.jvp("a")
def lu_factor_jvp(t, out, a):
    """With dK = L^{-1} P^T dA U^{-1} (on the square part): dL = L tril(dK, -1),
    dU = triu(dK) U; the rest of U (wide) or of L (tall) follows from A = P L U."""
    lu, pivots = out
    m, n = lu.shape[-2:]
    k = min(m, n)
    low, up = unpack(lu)
    d = lu_permute(t, pivots, transpose=True)
    if m == n:
        dk = _right_u_solve(_l_solve(low, d), up)
        return matmul(low, tril(dk, diagonal=-1)) + matmul(triu(dk), up), None
    if m < n:
        up1, up2 = columns(up, 0, k), columns(up, k)
        dk = _right_u_solve(_l_solve(low, columns(d, 0, k)), up1)
        d_low = matmul(low, tril(dk, diagonal=-1))
        d_up = cat(matmul(triu(dk), up1), _l_solve(low, columns(d, k) - matmul(d_low, up2)), dim=lu.ndim - 1)
        return d_up + cat(d_low, 0 * columns(d_up, k), dim=lu.ndim - 1), None
    low1, low2 = rows(low, 0, k), rows(low, k)
    dk = _right_u_solve(_l_solve(low1, rows(d, 0, k)), up)
    d_up = matmul(triu(dk), up)
    d_low = cat(matmul(low1, tril(dk, diagonal=-1)),
                _right_u_solve(rows(d, k), up) - matmul(low2, triu(dk)), dim=lu.ndim - 2)
    return d_low + cat(d_up, 0 * rows(d_low, k), dim=lu.ndim - 2), None
