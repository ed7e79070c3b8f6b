"""``scipy.linalg``'s operations that torch.linalg lacks: triangular and banded solves,
Sylvester's equation, the principal matrix square root and the matrix exponential
(stacked ``...xNxN`` operands, except for the banded solve, which takes SciPy's layout).

Derivatives (all holomorphic, so JAX's complex convention needs no conjugates except
where a kernel conjugates its operand, ``trans=2``):

* ``solve_triangular``: as ``solve``, with the gradient of ``a`` kept on the triangle the
  kernel reads (off the diagonal too when ``unit_diagonal``).
* ``solve_sylvester`` ``AX + XB = Q``: the adjoint of ``X -> AX + XB`` is
  ``Y -> A^T Y + Y B^T``, so every vjp solves one Sylvester equation with ``A^T, B^T``.
* ``sqrtm``: ``X X = A`` gives ``X dX + dX X = dA``: one Sylvester solve with ``X``.
* ``expm``: the Frechet derivative is the upper-right block of the exponential of the
  block matrix ``[[A, E], [0, A]]`` (Higham 2008, 10.6; the vjp uses ``A^T``).
* ``solve_banded``: as ``solve``, with ``A^T`` held in band form for the adjoint solve and
  the gradient of ``ab`` gathered from the band of ``-A^{-T} g X^T``.

The vjps are written with these primitives, so second derivatives come from the same
rules. The kernels of solve_sylvester, sqrtm, expm and solve_banded are SciPy's (imported
when they first run; an ImportError names the ``scipy`` extra) and run on the host for
arrays of other devices; solve_triangular needs only the array namespace.
"""
from ._scipy import scipy_module
from ..backend import cpu
from .broadcast import zeros_like
from .complex_ import conj_of, is_complex, real
from .core import FLOAT, primitive
from .decomp import mH, mT, shaped_like
from .index import basic_index
from .linalg import eye_of, matmul
from .nn import constant_pad_nd
from .reduce import sum
from .shape import cat, stack, tril, triu

__all__ = [
    "band_transpose",
    "expm",
    "scipy_linalg",
    "solve_banded",
    "solve_sylvester",
    "solve_triangular",
    "sqrtm",
]


def scipy_linalg():
    """``scipy.linalg``, imported on first use."""
    return scipy_module("scipy.linalg", "this function")


def _on_host(xp, fn, *arrays):
    """``fn`` (a function of NumPy arrays) of ``arrays``, which may live on another device."""
    if getattr(xp, "name", "cpu") == "cpu":
        return fn(*arrays)
    return xp.from_host(fn(*[xp.to_host(a) for a in arrays]))


def _per_matrix(xp, fn, *arrays):
    """``fn`` of one set of matrices, over the broadcast batch dims of ``arrays`` (SciPy
    before 1.15 takes single matrices), in the operands' precision."""
    batch = xp.broadcast_shapes(*(a.shape[:-2] for a in arrays))
    arrays = [xp.broadcast_to(a, batch + a.shape[-2:]) for a in arrays]
    dtype = xp.result_type(*arrays, xp.float32)
    if any(s == 0 for s in arrays[-1].shape):
        return xp.zeros(arrays[-1].shape, dtype)

    def host(*host_arrays):
        parts = [fn(*(a[i] for a in host_arrays)) for i in cpu.ndindex(*batch)]
        return cpu.stack(parts).reshape(batch + parts[0].shape) if batch else parts[0]
    out = _on_host(xp, host, *arrays)
    if out.dtype.kind == "c":  # (sqrtm of a real matrix with negative eigenvalues)
        dtype = xp.result_type(dtype, xp.complex64)
    return out.astype(dtype, copy=False)


# -- solve_triangular ---------------------------------------------------------------------------

def _triangle(xp, a, lower, unit):
    t = xp.tril(a) if lower else xp.triu(a)
    if unit:
        eye = xp.eye(a.shape[-1], dtype=a.dtype)
        t = t * (1 - eye) + eye
    return t


@primitive("LinalgSolveTriangularBackward0", dtypes=FLOAT, complex=True)
def solve_triangular(xp, a, b, *, lower=False, trans=0, unit_diagonal=False):
    """``op(T)^{-1} b`` for the triangle ``T`` of ``a`` (its lower one when ``lower``; ones
    on its diagonal when ``unit_diagonal``) and ``op`` the identity, the transpose or the
    conjugate transpose (``trans`` 0, 1, 2); ``b`` a (stack of) matrices."""
    if b.ndim < 2:
        raise ValueError(f"solve_triangular: b must be a (stack of) matrices, got shape {b.shape}")
    t = _triangle(xp, a, lower, unit_diagonal)
    if trans:
        t = xp.swapaxes(t, -1, -2)
        t = xp.conj(t) if trans == 2 else t
    batch = xp.broadcast_shapes(t.shape[:-2], b.shape[:-2])  # (CuPy's solve does not broadcast)
    t, b = xp.broadcast_to(t, batch + t.shape[-2:]), xp.broadcast_to(b, batch + b.shape[-2:])
    try:
        return xp.linalg.solve(t, b)
    except Exception as e:  # a zero on the diagonal: inf/nan, as LAPACK's trtrs (and torch) give
        if type(e).__name__ != "LinAlgError":
            raise
        return _substitute(xp, t, b, upper=(not lower) != bool(trans))


def _substitute(xp, t, b, upper):
    """Back (forward, for lower ``t``) substitution, letting a zero pivot give inf/nan."""
    x = xp.zeros(b.shape, dtype=xp.result_type(t, b))
    with cpu.errstate(all="ignore"):
        for i in (range(t.shape[-1] - 1, -1, -1) if upper else range(t.shape[-1])):
            rest = xp.sum(t[..., i, :, None] * x, axis=-2)
            x[..., i, :] = (b[..., i, :] - rest) / t[..., i, i, None]
    return x


def _on_triangle(m, lower, unit):
    """``m`` restricted to the entries the kernel reads."""
    m = tril(m) if lower else triu(m)
    return m * (1.0 - eye_of(m, n=m.shape[-1])) if unit else m


def _transposed_solve(a, g, lower, trans, unit):
    """``op(T)^{-T} g``: the transpose of the solve, applied to ``g``."""
    if trans == 2:  # op(T)^{-T} = conj(T)^{-1}
        return conj_of(solve_triangular(a, conj_of(g), lower=lower, trans=0, unit_diagonal=unit))
    return solve_triangular(a, g, lower=lower, trans=1 - trans, unit_diagonal=unit)


@solve_triangular.vjp("a", uses="a out")
def solve_triangular_vjp_a(g, out, a, b, *, lower=False, trans=0, unit_diagonal=False):
    g_op = -matmul(_transposed_solve(a, g, lower, trans, unit_diagonal), mT(out))
    g_t = g_op if trans == 0 else (mT(g_op) if trans == 1 else mH(g_op))
    return shaped_like(_on_triangle(g_t, lower, unit_diagonal), a.shape)


@solve_triangular.vjp("b", uses="a")
def solve_triangular_vjp_b(g, out, a, b, *, lower=False, trans=0, unit_diagonal=False):
    return shaped_like(_transposed_solve(a, g, lower, trans, unit_diagonal), b.shape)


@solve_triangular.jvp("a")
def solve_triangular_jvp_a(t, out, a, b, *, lower=False, trans=0, unit_diagonal=False):
    dt = _on_triangle(t, lower, unit_diagonal)
    d_op = dt if trans == 0 else (mT(dt) if trans == 1 else mH(dt))
    return -solve_triangular(a, matmul(d_op, out), lower=lower, trans=trans, unit_diagonal=unit_diagonal)


@solve_triangular.jvp("b")
def solve_triangular_jvp_b(t, out, a, b, *, lower=False, trans=0, unit_diagonal=False):
    return solve_triangular(a, t, lower=lower, trans=trans, unit_diagonal=unit_diagonal)


# -- solve_sylvester ------------------------------------------------------------------------------

@primitive(dtypes=FLOAT, complex=True)
def solve_sylvester(xp, a, b, q):
    """``X`` with ``a X + X b = q`` (Bartels-Stewart, SciPy's); a, q are ``...xMxM``,
    ``...xMxN``, b is ``...xNxN``."""
    # (all in one dtype: SciPy takes a real quasi-triangular Schur form of a real operand,
    # which its complex solver mistakes for triangular when another operand is complex)
    dtype = xp.result_type(a, b, q, xp.float32)
    return _per_matrix(xp, scipy_linalg().solve_sylvester, *(v.astype(dtype, copy=False) for v in (a, b, q)))


def _sylvester_adjoint(a, b, g):
    return solve_sylvester(mT(a), mT(b), g)


@solve_sylvester.vjp("a", uses="a b out")
def solve_sylvester_vjp_a(g, out, a, b, q):
    return shaped_like(-matmul(_sylvester_adjoint(a, b, g), mT(out)), a.shape)


@solve_sylvester.vjp("b", uses="a b out")
def solve_sylvester_vjp_b(g, out, a, b, q):
    return shaped_like(-matmul(mT(out), _sylvester_adjoint(a, b, g)), b.shape)


@solve_sylvester.vjp("q", uses="a b")
def solve_sylvester_vjp_q(g, out, a, b, q):
    return shaped_like(_sylvester_adjoint(a, b, g), q.shape)


@solve_sylvester.jvp("a")
def solve_sylvester_jvp_a(t, out, a, b, q):
    return solve_sylvester(a, b, -matmul(t, out))


@solve_sylvester.jvp("b")
def solve_sylvester_jvp_b(t, out, a, b, q):
    return solve_sylvester(a, b, -matmul(out, t))


@solve_sylvester.jvp("q")
def solve_sylvester_jvp_q(t, out, a, b, q):
    return solve_sylvester(a, b, t)


# -- sqrtm ----------------------------------------------------------------------------------------

def _sqrtm_kernel(a):
    return scipy_linalg().sqrtm(a)


@primitive(dtypes=FLOAT, complex=True)
def sqrtm(xp, a):
    """The principal square root (SciPy's Schur method): complex when a real ``a`` has
    eigenvalues on the negative real axis."""
    return _per_matrix(xp, _sqrtm_kernel, a)


@sqrtm.vjp("a", uses="out")
def sqrtm_vjp(g, out, a):
    ga = solve_sylvester(mT(out), mT(out), g)
    return real(ga) if is_complex(ga) and not is_complex(a) else ga


@sqrtm.jvp("a")
def sqrtm_jvp(t, out, a):
    return solve_sylvester(out, out, t)


# -- expm -----------------------------------------------------------------------------------------

def _expm_kernel(a):
    return scipy_linalg().expm(a)


@primitive(dtypes=FLOAT, complex=True)
def expm(xp, a):
    """The matrix exponential (SciPy's scaling and squaring)."""
    return _per_matrix(xp, _expm_kernel, a)


def frechet_expm(a, e):
    """``L(a, e)``, the derivative of expm at ``a`` in direction ``e``: the upper-right
    block of ``expm([[a, e], [0, a]])``."""
    n = a.shape[-1]
    big = cat(cat(a, e, dim=-1), cat(zeros_like(a), a, dim=-1), dim=-2)
    return basic_index(expm(big), index=(Ellipsis, slice(0, n), slice(n, 2 * n)))


@expm.vjp("a", uses="a")
def expm_vjp(g, out, a):
    ga = frechet_expm(mT(a), g)
    return real(ga) if is_complex(ga) and not is_complex(a) else ga


@expm.jvp("a")
def expm_jvp(t, out, a):
    return frechet_expm(a, t)


# -- solve_banded ---------------------------------------------------------------------------------

@primitive(dtypes=FLOAT, complex=True)
def solve_banded(xp, ab, b, *, l, u):
    """``A^{-1} b`` for the band matrix held in SciPy's layout: ``A[i, j] = ab[u + i - j,
    j]`` (``ab`` is ``(l + u + 1) x M``); ``b`` is ``M x K``."""
    if b.ndim != 2 or ab.ndim != 2 or ab.shape[0] != l + u + 1 or ab.shape[1] != b.shape[0]:
        raise ValueError(f"solve_banded: ab {ab.shape} and b {b.shape} do not fit (l, u) = ({l}, {u})")
    dtype = xp.result_type(ab, b, xp.float32)
    if b.size == 0:
        return xp.zeros(b.shape, dtype)
    out = _on_host(xp, lambda m, v: scipy_linalg().solve_banded((l, u), m, v), ab, b)
    return out.astype(dtype, copy=False)


def _shift(x, s, dim=0):
    """``out[i] = x[i - s]`` along ``dim``, zero where ``i - s`` falls outside."""
    if s == 0:
        return x
    pad = [0] * (2 * (x.ndim - dim))
    pad[-2], pad[-1] = s, -s
    return constant_pad_nd(x, pad=tuple(pad), value=0.0)


def _row(m, k):
    return basic_index(m, index=(k,))


def band_transpose(ab, l, u):
    """The band form of ``A^T`` (``u`` lower and ``l`` upper diagonals):
    ``abT[k] = shift(ab[l + u - k], l - k)``."""
    return stack(*[_shift(_row(ab, l + u - k), l - k) for k in range(l + u + 1)], dim=0)


def band_matmul(ab, x, l, u):
    """``A x`` from the band form: row k of ``ab`` holds the diagonal ``j - i = u - k``."""
    terms = [_shift(basic_index(ab, index=(k, slice(None), None)) * x, k - u) for k in range(l + u + 1)]
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return total


@solve_banded.vjp("ab", uses="ab out")
def solve_banded_vjp_ab(g, out, ab, b, *, l, u):
    gb = solve_banded(band_transpose(ab, l, u), g, l=u, u=l)
    # gA[i, j] = -sum_r gb[i, r] X[j, r], read on the band: gab[k, j] = gA[j + k - u, j]
    rows = [-sum(_shift(gb, u - k) * out, dim=(1,)) for k in range(l + u + 1)]
    return stack(*rows, dim=0)


@solve_banded.vjp("b", uses="ab")
def solve_banded_vjp_b(g, out, ab, b, *, l, u):
    return solve_banded(band_transpose(ab, l, u), g, l=u, u=l)


@solve_banded.jvp("ab")
def solve_banded_jvp_ab(t, out, ab, b, *, l, u):
    return -solve_banded(ab, band_matmul(t, out, l, u), l=l, u=u)


@solve_banded.jvp("b")
def solve_banded_jvp_b(t, out, ab, b, *, l, u):
    return solve_banded(ab, t, l=l, u=u)
