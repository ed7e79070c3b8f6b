"""``scipy.stats.norm`` with derivatives in ``x``, ``loc`` and ``scale`` (to any order):
SciPy's signatures, broadcasting and answers for a non-positive scale (nan)."""
import math

from ...rules import gamma as G
from ...rules import unary as U
from ._common import checked, data, operand, sampler

__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "rvs", "sf"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
rvs = sampler("norm")


def _z(x, loc, scale):
    return (data(x) - operand(loc)) / operand(scale)


def logpdf(x, loc=0, scale=1):
    z = _z(x, loc, scale)
    return checked(-0.5 * z * z - U.log(operand(scale)) - _LOG_SQRT_2PI, operand(scale) <= 0)


def pdf(x, loc=0, scale=1):
    return U.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    return checked(G.ndtr(_z(x, loc, scale)), operand(scale) <= 0)


def logcdf(x, loc=0, scale=1):
    return checked(G.log_ndtr(_z(x, loc, scale)), operand(scale) <= 0)


def sf(x, loc=0, scale=1):
    return checked(G.ndtr(-_z(x, loc, scale)), operand(scale) <= 0)


def logsf(x, loc=0, scale=1):
    return checked(G.log_ndtr(-_z(x, loc, scale)), operand(scale) <= 0)


def ppf(q, loc=0, scale=1):
    """The quantile function: ``loc + scale ndtri(q)``."""
    scale = operand(scale)
    return checked(operand(loc) + scale * G.ndtri(data(q)), scale <= 0)


def isf(q, loc=0, scale=1):
    scale = operand(scale)
    return checked(operand(loc) - scale * G.ndtri(data(q)), scale <= 0)
