"""``scipy.special`` with derivatives: SciPy's names and signatures (NumPy's ``axis``,
``keepdims``), computed by the rule table, on arrays, tape tracers and Tensors.

SciPy's ufuncs (``scipy.special.expit``, ``gammaln``, ``xlogy``...) already reach the tape
through ``__array_ufunc__``; its Python-level functions (``logsumexp``, ``softmax``,
``log_softmax``, ``polygamma``, ``multigammaln``) run NumPy code a tape cannot follow, so
differentiable code calls these instead. AST mode does that itself: a call of SciPy's own
function is differentiated through its counterpart here (:func:`counterpart`).
"""
import math

from ..backend import cpu
from ..rules import activation as ACT
from ..rules import arith as A
from ..rules import bessel as B
from ..rules import gamma as G
from ..rules import reduce as R
from ..rules import special as S
from ..rules import unary as U
from ..rules.broadcast import broadcast_to
from ..rules.shape import reshape

__all__ = ["logsumexp", "softmax", "log_softmax", "expit", "log_expit", "logit", "erf", "erfc", "erfcx",
           "erfinv", "erfcinv", "ndtr", "ndtri", "log_ndtr", "gammaln", "digamma", "psi", "polygamma",
           "multigammaln", "zeta", "gamma", "rgamma", "gammasgn", "beta", "betaln", "gammainc", "gammaincc",
           "betainc", "xlogy", "xlog1py", "entr", "i0", "i1", "i0e", "i1e", "jv", "jn", "yv", "yn", "iv",
           "ive", "j0", "j1", "y0", "y1", "exp2", "expm1", "log1p", "cbrt", "sinc"]


def _operand(x):
    """Lists and tuples as arrays (SciPy takes array-likes); everything else as given."""
    return cpu.asarray(x) if isinstance(x, (list, tuple)) else x


def _shape(x):
    return tuple(getattr(x, "shape", ()))


def _axes(axis, ndim):
    """NumPy's ``axis`` (None, an int or a tuple) as the table's sorted tuple of dims."""
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = set()
    for a in axes:
        if not -ndim <= int(a) < ndim:
            raise ValueError(f"axis {a} is out of bounds for array of dimension {ndim}")
        out.add(int(a) % ndim)
    return tuple(sorted(out))


def _unary(prim, doc):
    def f(x):
        return prim(_operand(x))
    f.__name__ = f.__qualname__ = prim.name
    f.__doc__ = f"{doc} (rule ``{prim.name}``)."
    return f


def _binary(prim, doc, name=None):
    def f(a, b):
        return prim(_operand(a), _operand(b))
    f.__name__ = f.__qualname__ = name or prim.name
    f.__doc__ = f"{doc} (rule ``{prim.name}``)."
    return f


# -- the ufuncs ---------------------------------------------------------------------------------

expit = _unary(ACT.sigmoid, "1 / (1 + exp(-x))")
log_expit = _unary(ACT.logsigmoid, "log(expit(x))")
erf = _unary(U.erf, "The error function")
erfc = _unary(G.erfc, "1 - erf(x)")
erfcx = _unary(G.erfcx, "exp(x^2) erfc(x)")
erfinv = _unary(G.erfinv, "The inverse of erf")
erfcinv = _unary(G.erfcinv, "The inverse of erfc")
ndtr = _unary(G.ndtr, "The standard normal distribution function")
ndtri = _unary(G.ndtri, "The inverse of ndtr")
log_ndtr = _unary(G.log_ndtr, "log(ndtr(x))")
gammaln = _unary(G.gammaln, "log |Gamma(x)|")
digamma = psi = _unary(G.digamma, "The logarithmic derivative of Gamma")
gamma = _unary(G.gamma, "The gamma function")
entr = _unary(S.entr, "-x log x")
i0 = _unary(B.i0, "The modified Bessel function of order 0")
i1 = _unary(B.i1, "The modified Bessel function of order 1")
i0e = _unary(B.i0e, "exp(-|x|) i0(x)")
i1e = _unary(B.i1e, "exp(-|x|) i1(x)")
exp2 = _unary(U.exp2, "2**x")
expm1 = _unary(U.expm1, "exp(x) - 1")
log1p = _unary(U.log1p, "log(1 + x)")
cbrt = _unary(S.cbrt, "The cube root")
sinc = _unary(S.sinc, "sin(pi x) / (pi x)")
beta = _binary(G.beta, "Gamma(a) Gamma(b) / Gamma(a + b)")
betaln = _binary(G.betaln, "log |B(a, b)|")
gammainc = _binary(G.gammainc, "The regularised lower incomplete gamma function (differentiable in x)")
gammaincc = _binary(G.gammaincc, "The regularised upper incomplete gamma function (differentiable in x)")
xlogy = _binary(S.xlogy, "x log(y), 0 where x == 0")
xlog1py = _binary(S.xlog1py, "x log(1 + y), 0 where x == 0")
jv = jn = _binary(B.jv, "The Bessel function of the first kind of real order v (differentiable in x)")
yv = _binary(B.yv, "The Bessel function of the second kind of real order v (differentiable in x)")
yn = _binary(B.yv, "The Bessel function of the second kind of integer order n", "yn")
iv = _binary(B.iv, "The modified Bessel function of real order v (differentiable in x)")
ive = _binary(B.ive, "exp(-|x|) iv(v, x)")


def logit(x):
    """log(x / (1 - x)) (rule ``logit``)."""
    return S.logit(_operand(x))


def betainc(a, b, x):
    """The regularised incomplete beta function, differentiable in x (rule ``betainc``)."""
    return G.betainc(_operand(a), _operand(b), _operand(x))


def polygamma(n, x):
    """The n-th derivative of digamma (rule ``polygamma``; n takes no gradient)."""
    return G.polygamma(_operand(n), _operand(x))


def zeta(x, q=None):
    """Hurwitz's zeta function (Riemann's for q=None); differentiable in q."""
    return G.zeta(_operand(x), 1.0 if q is None else _operand(q))


def j0(x):
    return B.jv(0, _operand(x))


def j1(x):
    return B.jv(1, _operand(x))


def y0(x):
    return B.yv(0, _operand(x))


def y1(x):
    return B.yv(1, _operand(x))


def rgamma(x):
    """1 / Gamma(x), 0 at the poles."""
    g = G.gamma(_operand(x))
    finite = A.isfinite(g)
    return A.where(finite, U.reciprocal(A.where(finite, g, 1.0)), 0.0)


def gammasgn(x):
    """The sign of Gamma(x) (no gradient)."""
    return U.sign(G.gamma(_operand(x)))


def multigammaln(a, d):
    """The log of the multivariate gamma function of dimension ``d``:
    d (d - 1) / 4 log(pi) + sum_j gammaln(a - j / 2), j = 0 .. d - 1."""
    if int(d) != d or d < 1:
        raise ValueError("d should be a positive integer (dimension)")
    a = _operand(a)
    total = d * (d - 1) / 4 * math.log(math.pi)
    for j in range(int(d)):
        total = G.gammaln(A.sub(a, j / 2)) + total
    return total


# -- reductions ---------------------------------------------------------------------------------

def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """log(sum(b * exp(a))) over ``axis``, stably; with ``return_sign``, (log|...|, sign)."""
    a = _operand(a)
    if not hasattr(a, "shape"):
        a = cpu.asarray(float(a))
    if b is not None:
        b = _operand(b)
        shape = cpu.broadcast_shapes(_shape(a), _shape(b))
        if _shape(a) != shape:
            a = broadcast_to(a, shape=shape)
    if a.ndim == 0:  # (SciPy takes a 0-d a as one of shape (1,))
        a = reshape(a, shape=(1,))
    dims = _axes(axis, a.ndim)
    if b is None and not return_sign:
        return R.logsumexp(a, dim=dims, keepdim=keepdims)
    # log sum b e^a = m + log sum b e^(a - m) for any m; the max keeps e^(a - m) in range (its
    # gradient cancels: d/dm of the right-hand side is 0)
    m = 0.0 if 0 in _shape(a) else R.amax(a, dim=dims, keepdim=True)
    if not isinstance(m, float):
        m = A.where(A.isfinite(m), m, 0.0)
    e = U.exp(A.sub(a, m))
    total = R.sum(e if b is None else A.mul(b, e), dim=dims, keepdim=True)
    out = A.add(U.log(U.abs(total) if return_sign else total), m)
    sgn = U.sign(total) if return_sign else None
    if not keepdims:
        kept = tuple(s for i, s in enumerate(_shape(a)) if i not in dims)
        out = reshape(out, shape=kept)
        sgn = None if sgn is None else reshape(sgn, shape=kept)
    return (out, sgn) if return_sign else out


def softmax(x, axis=None):
    """exp(x) / sum(exp(x)) over ``axis`` (all elements by default)."""
    x = _operand(x)
    if isinstance(axis, int) and getattr(x, "ndim", 0) > 0:
        return ACT.softmax(x, dim=axis % x.ndim)
    return U.exp(log_softmax(x, axis))


def log_softmax(x, axis=None):
    """x - logsumexp(x) over ``axis`` (all elements by default)."""
    x = _operand(x)
    if not hasattr(x, "shape"):
        x = cpu.asarray(float(x))
    if isinstance(axis, int) and x.ndim > 0:
        return ACT.log_softmax(x, dim=axis % x.ndim)
    if x.ndim == 0:
        return A.sub(x, x)
    return A.sub(x, R.logsumexp(x, dim=_axes(axis, x.ndim), keepdim=True))


# -- AST mode: SciPy's Python-level functions differentiated through these -------------------------

_PYTHON_LEVEL = {"logsumexp": logsumexp, "softmax": softmax, "log_softmax": log_softmax,
                 "polygamma": polygamma, "multigammaln": multigammaln}


def counterpart(fn):
    """This module's function for one of ``scipy.special``'s Python-level functions (found
    by module and name, without importing SciPy), or None."""
    module = getattr(fn, "__module__", None) or ""
    if not module.startswith("scipy.special"):
        return None
    return _PYTHON_LEVEL.get(getattr(fn, "__name__", None))
