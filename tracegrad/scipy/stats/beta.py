"""``scipy.stats.beta`` with derivatives: pdf and logpdf in ``x``, ``a``, ``b``, ``loc``
and ``scale``; cdf and sf in ``x``, ``loc`` and ``scale`` only. The derivative of the
regularised incomplete beta function in its shape parameters has no closed form:
differentiating cdf or sf with respect to ``a`` or ``b`` raises NotImplementedError (as
``tracegrad.scipy.special.betainc`` does), never a silent zero. Support [0, 1] after
``(x - loc) / scale``; nan for non-positive ``a``, ``b`` or ``scale``."""
from ...rules import arith as A
from ...rules import gamma as G
from ...rules import special as S
from ...rules import unary as U
from ._common import INF, checked, data, either, operand, sampler

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "rvs", "sf"]

rvs = sampler("beta")


def _standard(x, a, b, loc, scale):
    a, b, scale = operand(a), operand(b), operand(scale)
    return (data(x) - operand(loc)) / scale, a, b, scale


def logpdf(x, a, b, loc=0, scale=1):
    y, a, b, scale = _standard(x, a, b, loc, scale)
    outside = either(y < 0, y > 1)
    y = A.where(outside, 0.5, y)  # (a value inside, so that no nan reaches the gradient)
    value = S.xlogy(a - 1, y) + S.xlog1py(b - 1, -y) - G.betaln(a, b) - U.log(scale)
    return checked(A.where(outside, -INF, value), a <= 0, b <= 0, scale <= 0)


def pdf(x, a, b, loc=0, scale=1):
    return U.exp(logpdf(x, a, b, loc, scale))


def cdf(x, a, b, loc=0, scale=1):
    y, a, b, scale = _standard(x, a, b, loc, scale)
    return checked(G.betainc(a, b, A.clamp(y, min=0.0, max=1.0)), a <= 0, b <= 0, scale <= 0)


def sf(x, a, b, loc=0, scale=1):
    """``1 - cdf`` as ``I_{1-y}(b, a)`` (accurate in the upper tail)."""
    y, a, b, scale = _standard(x, a, b, loc, scale)
    return checked(G.betainc(b, a, 1.0 - A.clamp(y, min=0.0, max=1.0)), a <= 0, b <= 0, scale <= 0)


def logcdf(x, a, b, loc=0, scale=1):
    return U.log(cdf(x, a, b, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
    return U.log(sf(x, a, b, loc, scale))
