"""``scipy.stats.gamma`` with derivatives: pdf and logpdf in ``x``, ``a``, ``loc`` and
``scale``; cdf and sf in ``x``, ``loc`` and ``scale`` only. The derivative of the
regularised incomplete gamma function in its shape parameter has no closed form:
differentiating cdf or sf with respect to ``a`` raises NotImplementedError (as
``tracegrad.scipy.special.gammainc`` does), never a silent zero. Support [0, inf) after
``(x - loc) / scale``: pdf 0 and logpdf -inf outside; nan for ``a <= 0`` or ``scale <= 0``."""
from ...rules import arith as A
from ...rules import gamma as G
from ...rules import special as S
from ...rules import unary as U
from ._common import INF, checked, data, operand, sampler

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "rvs", "sf"]

rvs = sampler("gamma")


def _standard(x, a, loc, scale):
    a, scale = operand(a), operand(scale)
    return (data(x) - operand(loc)) / scale, a, scale


def logpdf(x, a, loc=0, scale=1):
    y, a, scale = _standard(x, a, loc, scale)
    below = y < 0
    y = A.where(below, 1.0, y)  # (a value inside, so that no nan reaches the gradient)
    value = S.xlogy(a - 1, y) - y - G.gammaln(a) - U.log(scale)
    return checked(A.where(below, -INF, value), a <= 0, scale <= 0)


def pdf(x, a, loc=0, scale=1):
    return U.exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
    y, a, scale = _standard(x, a, loc, scale)
    return checked(G.gammainc(a, A.where(y < 0, 0.0, y)), a <= 0, scale <= 0)


def sf(x, a, loc=0, scale=1):
    y, a, scale = _standard(x, a, loc, scale)
    return checked(G.gammaincc(a, A.where(y < 0, 0.0, y)), a <= 0, scale <= 0)


def logcdf(x, a, loc=0, scale=1):
    return U.log(cdf(x, a, loc, scale))


def logsf(x, a, loc=0, scale=1):
    return U.log(sf(x, a, loc, scale))
