"""``torch.special``: PyTorch's names and signatures (``dim``, ``keepdim``) over the rule
table's special functions. The SciPy-named (``axis``) versions of the same functions are
:mod:`tracegrad.scipy.special`. Kernels of the gamma, error and Bessel families come from
SciPy (imported on first use; an ImportError says so when it is missing).
"""
from .ops import activation as _act
from .ops import special as _ops
from .ops._args import wrap_dims as _wrap_dims
from .rules import activation as _A
from .rules import bessel as _B
from .rules import gamma as _G
from .rules import reduce as _R
from .rules import special as _S
from .rules import unary as _U

__all__ = ["expit", "logit", "erf", "erfc", "erfcx", "erfinv", "ndtr", "ndtri", "log_ndtr", "gammaln",
           "digamma", "psi", "polygamma", "multigammaln", "gammainc", "gammaincc", "zeta", "xlogy", "xlog1py",
           "entr", "sinc", "i0", "i0e", "i1", "i1e", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
           "logsumexp", "softmax", "log_softmax", "exp2", "expm1", "log1p", "round", "log_expit"]


def _unary(prim, name=None):
    def f(input):
        return prim(input)
    f.__name__ = f.__qualname__ = name or prim.name
    f.__doc__ = f"``torch.special.{f.__name__}`` (rule ``{prim.name}``)."
    return f


expit = _unary(_A.sigmoid, "expit")
log_expit = _unary(_A.logsigmoid, "log_expit")
erf = _unary(_U.erf)
erfc = _unary(_G.erfc)
erfcx = _unary(_G.erfcx)
erfinv = _unary(_G.erfinv)
ndtr = _unary(_G.ndtr)
ndtri = _unary(_G.ndtri)
log_ndtr = _unary(_G.log_ndtr)
gammaln = _unary(_G.gammaln)
digamma = psi = _unary(_G.digamma)
entr = _unary(_S.entr)
sinc = _unary(_S.sinc)
i0 = _unary(_B.i0)
i0e = _unary(_B.i0e)
i1 = _unary(_B.i1)
i1e = _unary(_B.i1e)
exp2 = _unary(_U.exp2)
expm1 = _unary(_U.expm1)
log1p = _unary(_U.log1p)
polygamma = _ops.polygamma
logit = _ops.logit


def multigammaln(input, p):
    return _ops.mvlgamma(input, p)


def round(input, *, decimals=0):  # noqa: A001
    return _U.round(input, decimals=decimals)


def xlogy(input, other):
    return _S.xlogy(input, other)


def xlog1py(input, other):
    return _S.xlog1py(input, other)


def gammainc(input, other):
    """The regularised lower incomplete gamma function P(input, other); differentiable in
    ``other`` only, as in PyTorch."""
    return _G.gammainc(input, other)


def gammaincc(input, other):
    return _G.gammaincc(input, other)


def zeta(input, other):
    """Hurwitz's zeta function; differentiable in ``other`` only, as in PyTorch."""
    return _G.zeta(input, other)


def bessel_j0(input):
    return _B.jv(0, input)


def bessel_j1(input):
    return _B.jv(1, input)


def bessel_y0(input):
    return _B.yv(0, input)


def bessel_y1(input):
    return _B.yv(1, input)


def logsumexp(input, dim, keepdim=False):
    return _R.logsumexp(input, dim=_wrap_dims(dim, input.ndim), keepdim=keepdim)


def softmax(input, dim, *, dtype=None):
    return _act._softmax(input, dim, dtype)


def log_softmax(input, dim, *, dtype=None):
    return _act._log_softmax(input, dim, dtype)
