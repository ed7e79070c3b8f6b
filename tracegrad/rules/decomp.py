"""Inverses and decompositions: inv, det, slogdet, solve, cholesky, qr (stacked ``...xMxN``
operands throughout; eigh, eig and svd are in :mod:`tracegrad.rules.spectral`).

Each derivative is the published one (Giles 2008 for inv, det and solve, det's as the
cofactor matrix so that it holds at singular matrices too; Murray 2016 for
Cholesky; Walter & Lehmann's ``copyltu`` form for QR), written with matmul, solve and the
triangle primitives, so second derivatives come from differentiating these vjps.

Two conventions, both chosen so that a vjp is the derivative of the kernel it belongs to
(what the table's finite-difference check demands):

* cholesky (like eigh) reads only one triangle of its operand, as LAPACK does. Its
  gradient therefore lives on that triangle: ``Phi(S + S^H)``, where ``S + S^H`` is the
  Hermitian gradient PyTorch returns. For any symmetric parametrisation (``A = B B^T``,
  ``(X + X^T) / 2``) the two give the same gradient of the parameters; for a
  non-symmetric leaf PyTorch's answer is not the derivative of what it computes.
* ``solve(a, b)`` takes ``b`` as (a stack of) matrices; the torch and NumPy front ends
  turn a vector ``b`` into a column first.

Complex values (JAX's convention, see :mod:`tracegrad.rules.core`): inv, det and solve
are holomorphic, so their real formulas hold as written; slogdet, cholesky (Hermitian)
and qr write their conjugates.
"""
from . import lapack
from .broadcast import sum_to
from .complex_ import conj_of, imag, is_complex, real_of
from .core import FLOAT, primitive
from .index import basic_index
from .linalg import eye_of, matmul
from .reduce import sum
from .shape import cat, diagonal, reshape, transpose, tril, triu, unsqueeze

__all__ = [
    "as_matrix_scale",
    "cholesky",
    "cofactor",
    "columns",
    "det",
    "diag_embed",
    "diag_part",
    "halved_triangle",
    "hermitian_from_triangle",
    "inv",
    "mH",
    "mT",
    "qr",
    "rows",
    "shaped_like",
    "slogdet",
    "solve",
    "solve_right",
    "trace_of",
]


# -- helpers shared with spectral.py --------------------------------------------------------------

def mT(a):
    """``a`` with its last two dims swapped."""
    return transpose(a, dim0=a.ndim - 2, dim1=a.ndim - 1)


def mH(a):
    """The conjugate transpose (``mT`` for real values)."""
    return conj_of(mT(a))


def diag_part(m):
    """The diagonals of a stack of matrices, ``(..., n)``."""
    return diagonal(m, offset=0, dim1=m.ndim - 2, dim2=m.ndim - 1)


def diag_embed(v):
    """Diagonal matrices ``(..., n, n)`` with ``v`` (``(..., n)``) on their diagonals."""
    return unsqueeze(v, dim=v.ndim) * eye_of(v, n=v.shape[-1])


def as_matrix_scale(s):
    """A per-matrix scalar ``(...)`` shaped ``(..., 1, 1)`` to scale a stack of matrices."""
    return reshape(s, shape=tuple(s.shape) + (1, 1))


def trace_of(m):
    d = diag_part(m)
    return sum(d, dim=(d.ndim - 1,))


def shaped_like(grad, shape):
    """A gradient summed over the batch dims its operand was broadcast along."""
    shape = tuple(shape)
    return grad if tuple(grad.shape) == shape else sum_to(grad, shape=shape)


def solve_right(b, a):
    """``b a^{-1}`` (solving ``x a = b``) as ``(a^T \\ b^T)^T``."""
    return mT(solve(mT(a), mT(b)))


def halved_triangle(x, upper=False):
    """``Phi(x)``: the lower (or upper) triangle of ``x`` with its diagonal halved."""
    part = triu(x) if upper else tril(x)
    return part - 0.5 * (x * eye_of(x, n=x.shape[-1]))


def columns(m, start, stop=None):
    return basic_index(m, index=(Ellipsis, slice(None), slice(start, stop)))


def rows(m, start, stop=None):
    return basic_index(m, index=(Ellipsis, slice(start, stop), slice(None)))


# -- inv, det, slogdet -------------------------------------------------------------------------

@primitive("LinalgInvExBackward0", dtypes=FLOAT, complex=True)
def inv(xp, x):
    try:
        return xp.linalg.inv(x)
    except Exception as e:
        _reraise(xp, e, x, "linalg.inv", lapack.SINGULAR_INV)


def _reraise(xp, e, a, function, detail):
    """Turn NumPy's LinAlgError for ``a`` into PyTorch's (naming the matrix's info)."""
    if not lapack.is_lapack_error(e):
        raise e
    if detail is lapack.NOT_PD:
        lapack.raise_for(xp, lapack.cholesky_info(xp, a), function, detail)
    else:
        lapack.raise_for(xp, lapack.lu_info(xp, lapack.lu_factor(xp, a)[0]), function, detail)
    raise e


@inv.vjp("x", uses="out")
def inv_vjp(g, out, x):
    inv_t = mT(out)
    return -matmul(inv_t, matmul(g, inv_t))


@inv.jvp("x")
def inv_jvp(t, out, x):
    return -matmul(out, matmul(t, out))


@primitive("LinalgDetBackward0", dtypes=FLOAT, complex=True)
def det(xp, x):
    """The determinant; its derivative is the cofactor matrix (:func:`cofactor`), which
    is defined for singular matrices too."""
    return xp.asarray(xp.linalg.det(x))


@det.vjp("x", uses="x")
def det_vjp(g, out, x):
    return as_matrix_scale(g) * cofactor(x)


@det.jvp("x")
def det_jvp(t, out, x):
    return sum(cofactor(x) * t, dim=(x.ndim - 2, x.ndim - 1))


@primitive(dtypes=FLOAT, complex=True)
def cofactor(xp, x):
    """The cofactor matrix of square ``x`` (the adjugate's transpose): the derivative of
    ``det(x)``. It equals ``det(x) x^{-T}`` where ``x`` is invertible, and it is still
    the derivative where it is not: of ``[[1, 2], [2, 4]]`` it is ``[[4, -2], [-2, 1]]``,
    and zero only where the rank is below ``n - 1``. (PyTorch 2.13 returns zeros for
    every singular matrix.) From the SVD ``x = U diag(s) V^H``, with ``p_i`` the product
    of the singular values other than ``s_i``, it is ``det(U) det(V^H) conj(U) diag(p)
    conj(V^H)``: no division, so as accurate near a singular matrix as away from one."""
    n = x.shape[-1]
    if n == 0 or x.size == 0:
        return xp.zeros_like(x)
    u, s, vh = xp.linalg.svd(x)
    ones = xp.ones_like(s[..., :1])
    before = xp.cumprod(xp.concatenate([ones, s[..., :-1]], axis=-1), axis=-1)
    after = xp.flip(xp.cumprod(xp.flip(xp.concatenate([s[..., 1:], ones], axis=-1), axis=-1), axis=-1), axis=-1)
    phase = (xp.linalg.det(u) * xp.linalg.det(vh))[..., None, None]
    return (phase * xp.matmul(xp.conj(u) * (before * after)[..., None, :], xp.conj(vh))).astype(x.dtype, copy=False)


@cofactor.vjp("x", uses="x out")
def cofactor_vjp(g, out, x):
    # d C = tr(x^{-1} dx) C - C dx^T x^{-T}: written with the inverse, so a second
    # derivative of det at a singular matrix raises there (the first one does not)
    inv_t = mT(inv(x))
    return as_matrix_scale(sum(g * inv_t, dim=(x.ndim - 2, x.ndim - 1))) * out - matmul(out, matmul(mT(g), inv_t))


@cofactor.jvp("x")
def cofactor_jvp(t, out, x):
    inv_t = mT(inv(x))
    return as_matrix_scale(sum(inv_t * t, dim=(x.ndim - 2, x.ndim - 1))) * out - matmul(out, matmul(mT(t), inv_t))


@primitive("LinalgSlogdetBackward0", dtypes=FLOAT, nout=2, result_names=("sign", "logabsdet"),
           complex=True)
def slogdet(xp, x):
    """``(sign, log|det|)``, sign = det / |det|. With t = tr(x^{-1} dx): d log|det| = Re t,
    d sign = i Im(t) sign (0 for real x: the sign is piecewise constant)."""
    sign, logabs = xp.linalg.slogdet(x)
    return xp.asarray(sign), xp.asarray(logabs)


@slogdet.vjp("x", uses="x out")
def slogdet_vjp(g, out, x):
    (g_sign, g_log), (sign, _) = g, out
    g_trace = g_log
    if is_complex(sign):
        g_trace = g_log + 1j * imag(g_sign * sign)
    return as_matrix_scale(g_trace) * mT(inv(x))


@slogdet.jvp("x")
def slogdet_jvp(t, out, x):
    sign = out[0]
    trace = trace_of(solve(x, t))
    if is_complex(sign):
        return 1j * imag(trace) * sign, real_of(trace)
    return None, real_of(trace)


# -- solve ----------------------------------------------------------------------------------------

@primitive("LinalgSolveExBackward0", dtypes=FLOAT, complex=True)
def solve(xp, a, b):
    """``a^{-1} b`` for stacks of square ``a`` and of matrices ``b`` (batch dims broadcast)."""
    if b.ndim < 2:
        raise ValueError(f"solve: b must be a (stack of) matrices, got shape {b.shape}")
    batch = xp.broadcast_shapes(a.shape[:-2], b.shape[:-2])  # (CuPy's solve does not broadcast)
    if a.shape[:-2] != batch:
        a = xp.broadcast_to(a, batch + a.shape[-2:])
    if b.shape[:-2] != batch:
        b = xp.broadcast_to(b, batch + b.shape[-2:])
    try:
        return xp.linalg.solve(a, b)
    except Exception as e:
        _reraise(xp, e, a, "torch.linalg.solve", lapack.SINGULAR_SOLVE)


@solve.vjp("a", uses="a out")
def solve_vjp_a(g, out, a, b):
    return shaped_like(-matmul(solve(mT(a), g), mT(out)), a.shape)


@solve.vjp("b", uses="a")
def solve_vjp_b(g, out, a, b):
    return shaped_like(solve(mT(a), g), b.shape)


@solve.jvp("a")
def solve_jvp_a(t, out, a, b):
    return -solve(a, matmul(t, out))


@solve.jvp("b")
def solve_jvp_b(t, out, a, b):
    return solve(a, t)


# -- cholesky -------------------------------------------------------------------------------------

@primitive("LinalgCholeskyExBackward0", dtypes=FLOAT, complex=True)
def cholesky(xp, x, *, upper=False):
    """The Cholesky factor of the Hermitian matrix held in the lower (``upper``: upper)
    triangle of ``x`` (the imaginary parts of its diagonal are ignored, as LAPACK does):
    ``L`` with ``L L^H = A``, or ``U = L^H`` when ``upper``."""
    try:
        if upper:
            return _h(xp, xp.linalg.cholesky(_h(xp, x)))
        return xp.linalg.cholesky(x)
    except Exception as e:
        _reraise(xp, e, _h(xp, x) if upper else x, "linalg.cholesky", lapack.NOT_PD)


def _h(xp, a):
    return xp.conj(xp.swapaxes(a, -1, -2))


@cholesky.vjp("x", uses="out")
def cholesky_vjp(g, out, x, *, upper=False):
    low, g_low = (mH(out), mH(g)) if upper else (out, g)
    # Murray 2016: S = L^{-T} Phi(L^T gL) conj(L)^{-1}; on the triangle the kernel reads,
    # the gradient is Phi(S + S^H) (S + S^H is the Hermitian gradient PyTorch returns).
    p = halved_triangle(matmul(mT(low), g_low))
    s = solve_right(solve(mT(low), p), conj_of(low))
    grad = halved_triangle(s + mH(s))
    return mH(grad) if upper else grad


@cholesky.jvp("x")
def cholesky_jvp(t, out, x, *, upper=False):
    low = mH(out) if upper else out
    d = hermitian_from_triangle(t, upper)
    w = solve_right(solve(low, d), mH(low))  # L^{-1} dA L^{-H}
    d_low = matmul(low, halved_triangle(w))
    return mH(d_low) if upper else d_low


def hermitian_from_triangle(t, upper=False):
    """The Hermitian matrix that the lower (upper) triangle of ``t`` stands for (the real
    part of its diagonal)."""
    part = triu(t) if upper else tril(t)
    return part + mH(part) - real_of(t) * eye_of(real_of(t), n=t.shape[-1])


# -- qr ---------------------------------------------------------------------------------------------

@primitive("LinalgQrBackward0", dtypes=FLOAT, nout=2, result_names=("Q", "R"), complex=True)
def qr(xp, x, *, mode="reduced"):
    """``(Q, R)`` with ``mode`` "reduced" or "complete" (R's diagonal is real, as LAPACK
    makes it). Differentiable where Q and R are determined by ``x``: "reduced", or
    "complete" with rows <= cols (as PyTorch)."""
    q, r = xp.linalg.qr(x, mode=mode)
    return q, r


def _qr_check(x, mode):
    m, n = x.shape[-2], x.shape[-1]
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and "
                           "nrows > ncols.")
    return m, n


@qr.vjp("x", uses="x out")
def qr_vjp(g, out, x, *, mode="reduced"):
    (gq, gr), (q, r) = g, out
    m, n = _qr_check(x, mode)
    if m >= n:
        return _qr_tall_vjp(gq, gr, q, r)
    # Wide: x = [X | Y] with X = Q U square and V = Q^H Y (Liao et al. 2019).
    u, y, gu, gv = columns(r, 0, m), columns(x, m), columns(gr, 0, m), columns(gr, m)
    gx = _qr_tall_vjp(gq + matmul(conj_of(y), mH(gv)), gu, q, u)
    return cat(gx, matmul(conj_of(q), gv), dim=gx.ndim - 1)


def _qr_tall_vjp(gq, gr, q, r):
    """gA = (gQ + conj(Q) Herm(M)) R^{-T}, M = gR R^T - Q^T gQ, for rows >= cols: Herm
    completes M's upper triangle to a Hermitian matrix (the real form of Walter and
    Lehmann's ``copyltu``)."""
    m = matmul(gr, mT(r)) - matmul(mT(q), gq)
    return solve_right(gq + matmul(conj_of(q), hermitian_from_triangle(m, upper=True)), mT(r))


@qr.jvp("x")
def qr_jvp(t, out, x, *, mode="reduced"):
    q, r = out
    m, n = _qr_check(x, mode)
    if m >= n:
        return _qr_tall_jvp(t, q, r)
    dq, du = _qr_tall_jvp(columns(t, 0, m), q, columns(r, 0, m))
    y, dy = columns(x, m), columns(t, m)
    dv = matmul(mH(dq), y) + matmul(mH(q), dy)
    return dq, cat(du, dv, dim=du.ndim - 1)


def _qr_tall_jvp(t, q, r):
    """With Z = dA R^{-1} and C = Q^H Z = (skew-Hermitian Q^H dQ) + (upper dR R^{-1}, real
    diagonal): dR R^{-1} = Up = triu(C, 1) + tril(C, -1)^H + Re diag(C), dR = Up R and
    dQ = Z - Q Up."""
    z = solve_right(t, r)
    c = matmul(mH(q), z)
    up = triu(c, diagonal=1) + mH(tril(c, diagonal=-1)) + real_of(c) * eye_of(real_of(c), n=c.shape[-1])
    return z - matmul(q, up), matmul(up, r)
