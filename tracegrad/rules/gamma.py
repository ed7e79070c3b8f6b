"""Special functions whose kernels come from SciPy (``scipy.special`` on the CPU,
``cupyx.scipy.special`` on CUDA): the error-function family (erfc, erfcx, erfinv,
erfcinv, ndtr, ndtri, log_ndtr) and the gamma family (gammaln, digamma, polygamma, gamma,
beta, betaln, Hurwitz's zeta, the regularised incomplete gamma and beta functions).

SciPy is an optional dependency: it is imported when one of these kernels first runs,
never when tracegrad is imported, and a kernel that needs it raises an ImportError that
says so. (erfc alone falls back to the C library's on the CPU.)

Order and shape parameters (polygamma's n, gammainc's a, betainc's a and b) take no
gradient: an integer order has none, and the derivatives in a real shape parameter have
no closed form. Differentiating with respect to one raises, as PyTorch and HIPS autograd
do, rather than giving a silent zero.
"""
import math

from ._scipy import scipy_module
from .broadcast import expand_to, unbroadcast
from .core import FLOAT, primitive
from .special import xlog1py, xlogy
from .unary import exp

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2.0
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2PI = math.sqrt(2.0 * math.pi)

_SCIPY = {"cpu": "scipy.special", "cuda": "cupyx.scipy.special"}
_CPU_FALLBACK = {"erfc": math.erfc}  # (vectorised with frompyfunc when SciPy is missing)


def scipy_kernel(xp, name):
    """SciPy's special function ``name`` for array namespace ``xp``, imported on first use."""
    module = _SCIPY.get(getattr(xp, "name", "cpu"), "scipy.special")
    try:
        found = getattr(scipy_module(module, name), name, None)
    except ImportError:
        if module == "scipy.special" and name in _CPU_FALLBACK:
            return _vectorised(xp, _CPU_FALLBACK[name])
        raise
    if found is None and module != "scipy.special":  # (cupyx lacks it: SciPy on the host)
        return _on_host(xp, getattr(scipy_module("scipy.special", name), name))
    if found is None:
        raise AttributeError(f"scipy.special has no function {name!r} (an older SciPy?)")
    return found


def _on_host(xp, fn):
    """SciPy's ``fn`` run on host copies of device operands, its result moved back: for the
    special functions CuPy has no kernel of."""
    def apply(*operands):
        host = [xp.to_host(o) if isinstance(o, xp.ndarray) else o for o in operands]
        return xp.from_host(fn(*host))
    return apply


def _vectorised(xp, fn):
    scalar = xp.frompyfunc(fn, 1, 1)

    def apply(x):
        x = xp.asarray(x)
        return xp.asarray(scalar(x), dtype=x.dtype if x.dtype.kind == "f" else xp.float64)
    return apply


def special(xp, name, *operands):
    """SciPy's ``name`` of ``operands``, answered in the dtype the float array operands
    share (SciPy computes float16, or a float32 array with an integer array, in float32
    or float64; PyTorch answers in the operands' own precision)."""
    dts = [a.dtype for a in operands if getattr(a, "ndim", None) is not None and a.dtype.kind in "fc"]
    if getattr(xp, "name", "cpu") != "cpu":  # (CuPy's kernels take arrays, not Python numbers)
        operands = [xp.asarray(o) if isinstance(o, (bool, int, float)) else o for o in operands]
    out = scipy_kernel(xp, name)(*operands)
    if dts and hasattr(out, "astype"):
        target = xp.result_type(*dts)
        if out.dtype != target:
            out = out.astype(target)
    return out


def no_derivative(name, operand):
    """What differentiating an order or shape parameter raises."""
    raise NotImplementedError(
        f"the derivative of {name} with respect to its operand {operand!r} is not implemented (as "
        f"in PyTorch and HIPS autograd); only its last operand is differentiable. Pass {operand} "
        "as a constant (detach() it, or tracegrad.stop_gradient)")


# -- the error-function family --------------------------------------------------------------

@primitive("ErfcBackward0", dtypes=FLOAT, diagonal=True, complex=True)
def erfc(xp, x):
    """1 - erf(x) (SciPy's, which takes complex x; the rule is holomorphic)."""
    return special(xp, "erfc", x)


@erfc.vjp("x", uses="x")
def erfc_vjp(g, out, x):
    return -g * _TWO_OVER_SQRT_PI * exp(-x * x)


@primitive("SpecialErfcxBackward0", dtypes=FLOAT, diagonal=True)
def erfcx(xp, x):
    """exp(x^2) erfc(x), the scaled complementary error function."""
    return special(xp, "erfcx", x)


@erfcx.vjp("x", uses="x out")
def erfcx_vjp(g, out, x):
    return g * (2 * x * out - _TWO_OVER_SQRT_PI)


@primitive("ErfinvBackward0", dtypes=FLOAT, diagonal=True)
def erfinv(xp, x):
    return special(xp, "erfinv", x)


@erfinv.vjp("x", uses="out")
def erfinv_vjp(g, out, x):
    return g * _SQRT_PI_OVER_2 * exp(out * out)


@primitive(dtypes=FLOAT, diagonal=True)
def erfcinv(xp, x):
    """The inverse of erfc (accurate near 0, where erfinv(1 - x) would round)."""
    return special(xp, "erfcinv", x)


@erfcinv.vjp("x", uses="out")
def erfcinv_vjp(g, out, x):
    return -g * _SQRT_PI_OVER_2 * exp(out * out)


@primitive("SpecialNdtrBackward0", dtypes=FLOAT, diagonal=True)
def ndtr(xp, x):
    """The standard normal distribution function."""
    return special(xp, "ndtr", x)


@ndtr.vjp("x", uses="x")
def ndtr_vjp(g, out, x):
    return g * _INV_SQRT_2PI * exp(-0.5 * x * x)


@primitive("SpecialNdtriBackward0", dtypes=FLOAT, diagonal=True)
def ndtri(xp, x):
    """The inverse of ndtr."""
    return special(xp, "ndtri", x)


@ndtri.vjp("x", uses="out")
def ndtri_vjp(g, out, x):
    return g * _SQRT_2PI * exp(0.5 * out * out)


@primitive("SpecialLogNdtrBackward0", dtypes=FLOAT, diagonal=True)
def log_ndtr(xp, x):
    return special(xp, "log_ndtr", x)


@log_ndtr.vjp("x", uses="x out")
def log_ndtr_vjp(g, out, x):
    # the normal density over ndtr, as one exponential: finite far in the left tail
    return g * _INV_SQRT_2PI * exp(-0.5 * x * x - out)


# -- the gamma family -------------------------------------------------------------------------

@primitive("LgammaBackward0", dtypes=FLOAT, diagonal=True)
def gammaln(xp, x):
    """log |Gamma(x)| (PyTorch's lgamma)."""
    return special(xp, "gammaln", x)


@gammaln.vjp("x", uses="x")
def gammaln_vjp(g, out, x):
    return g * digamma(x)


@primitive("DigammaBackward0", dtypes=FLOAT, diagonal=True)
def digamma(xp, x):
    return special(xp, "psi", x)


@digamma.vjp("x", uses="x")
def digamma_vjp(g, out, x):
    return g * polygamma(1, x)


@primitive("PolygammaBackward0", dtypes=FLOAT, cast=(1,))
def polygamma(xp, n, x):
    """The n-th derivative of digamma (``n`` a non-negative integer, or an array of them)."""
    return special(xp, "polygamma", n, x)


@polygamma.vjp("x", uses="n x")
def polygamma_vjp(g, out, n, x):
    return unbroadcast(g * polygamma(n + 1, x), x)


@polygamma.jvp("x")
def polygamma_jvp(t, out, n, x):
    return expand_to(t * polygamma(n + 1, x), out)


@primitive(dtypes=FLOAT, diagonal=True)
def gamma(xp, x):
    return special(xp, "gamma", x)


@gamma.vjp("x", uses="x out")
def gamma_vjp(g, out, x):
    return g * out * digamma(x)


def beta_slope(a, b):
    """d log|B(a, b)| / da."""
    return digamma(a) - digamma(a + b)


@primitive(dtypes=FLOAT)
def beta(xp, a, b):
    """Gamma(a) Gamma(b) / Gamma(a + b)."""
    return special(xp, "beta", a, b)


@beta.vjp("a", uses="a b out")
def beta_vjp_a(g, out, a, b):
    return unbroadcast(g * out * beta_slope(a, b), a)


@beta.vjp("b", uses="a b out")
def beta_vjp_b(g, out, a, b):
    return unbroadcast(g * out * beta_slope(b, a), b)


@beta.jvp("a")
def beta_jvp_a(t, out, a, b):
    return expand_to(t * out * beta_slope(a, b), out)


@beta.jvp("b")
def beta_jvp_b(t, out, a, b):
    return expand_to(t * out * beta_slope(b, a), out)


@primitive(dtypes=FLOAT)
def betaln(xp, a, b):
    """log |B(a, b)|."""
    return special(xp, "betaln", a, b)


@betaln.vjp("a", uses="a b")
def betaln_vjp_a(g, out, a, b):
    return unbroadcast(g * beta_slope(a, b), a)


@betaln.vjp("b", uses="a b")
def betaln_vjp_b(g, out, a, b):
    return unbroadcast(g * beta_slope(b, a), b)


@betaln.jvp("a")
def betaln_jvp_a(t, out, a, b):
    return expand_to(t * beta_slope(a, b), out)


@betaln.jvp("b")
def betaln_jvp_b(t, out, a, b):
    return expand_to(t * beta_slope(b, a), out)


@primitive("SpecialZetaBackward0", dtypes=FLOAT)
def zeta(xp, x, q):
    """The Hurwitz zeta function sum_k (k + q)^-x (polygamma(n, q) is a multiple of
    zeta(n + 1, q): SciPy computes it so); differentiable in q."""
    return special(xp, "zeta", x, q)


@zeta.vjp("x")
def zeta_vjp_x(g, out, x, q):
    return no_derivative("zeta", "x")


@zeta.vjp("q", uses="x q")
def zeta_vjp_q(g, out, x, q):
    return unbroadcast(-g * x * zeta(x + 1, q), q)


@zeta.jvp("q")
def zeta_jvp_q(t, out, x, q):
    return expand_to(-t * x * zeta(x + 1, q), out)


# -- regularised incomplete gamma and beta functions: differentiable in x only ----------------

def gamma_density(a, x):
    """d gammainc(a, x) / dx = x^(a-1) e^-x / Gamma(a), as one exponential (0^0 = 1)."""
    return exp(xlogy(a - 1, x) - x - gammaln(a))


@primitive("IgammaBackward0", dtypes=FLOAT)
def gammainc(xp, a, x):
    """The regularised lower incomplete gamma function P(a, x)."""
    return special(xp, "gammainc", a, x)


@gammainc.vjp("a")
def gammainc_vjp_a(g, out, a, x):
    return no_derivative("gammainc", "a")


@gammainc.vjp("x", uses="a x")
def gammainc_vjp_x(g, out, a, x):
    return unbroadcast(g * gamma_density(a, x), x)


@gammainc.jvp("x")
def gammainc_jvp_x(t, out, a, x):
    return expand_to(t * gamma_density(a, x), out)


@primitive("IgammacBackward0", dtypes=FLOAT)
def gammaincc(xp, a, x):
    """The regularised upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return special(xp, "gammaincc", a, x)


@gammaincc.vjp("a")
def gammaincc_vjp_a(g, out, a, x):
    return no_derivative("gammaincc", "a")


@gammaincc.vjp("x", uses="a x")
def gammaincc_vjp_x(g, out, a, x):
    return unbroadcast(-g * gamma_density(a, x), x)


@gammaincc.jvp("x")
def gammaincc_jvp_x(t, out, a, x):
    return expand_to(-t * gamma_density(a, x), out)


def beta_density(a, b, x):
    """d betainc(a, b, x) / dx = x^(a-1) (1-x)^(b-1) / B(a, b)."""
    return exp(xlogy(a - 1, x) + xlog1py(b - 1, -x) - betaln(a, b))


@primitive(dtypes=FLOAT)
def betainc(xp, a, b, x):
    """The regularised incomplete beta function I_x(a, b)."""
    return special(xp, "betainc", a, b, x)


@betainc.vjp("a")
def betainc_vjp_a(g, out, a, b, x):
    return no_derivative("betainc", "a")


@betainc.vjp("b")
def betainc_vjp_b(g, out, a, b, x):
    return no_derivative("betainc", "b")


@betainc.vjp("x", uses="a b x")
def betainc_vjp_x(g, out, a, b, x):
    return unbroadcast(g * beta_density(a, b, x), x)


@betainc.jvp("x")
def betainc_jvp_x(t, out, a, b, x):
    return expand_to(t * beta_density(a, b, x), out)


__all__ = [
    "beta",
    "betainc",
    "betaln",
    "digamma",
    "erfc",
    "erfcinv",
    "erfcx",
    "erfinv",
    "gamma",
    "gammainc",
    "gammaincc",
    "gammaln",
    "log_ndtr",
    "ndtr",
    "ndtri",
    "no_derivative",
    "polygamma",
    "scipy_kernel",
    "special",
    "zeta",
]
