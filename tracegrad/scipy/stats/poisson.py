"""``scipy.stats.poisson`` with derivatives in ``mu`` (to any order). ``k`` is a count:
pmf and logpmf are 0 and -inf at negative or non-integer ``k``, and cdf and sf are
constant between integers, so they take no gradient in ``k`` (it is stopped, not
refused); pmf and logpmf differentiate in ``k`` the formula ``k log(mu) - log(k!) - mu``
that holds at the integers (as ``jax.scipy.stats.poisson`` does). nan for ``mu < 0``."""
from ...rules import arith as A
from ...rules import gamma as G
from ...rules import special as S
from ...rules import unary as U
from ...transform import stop_gradient
from ._common import INF, checked, data, operand, sampler

__all__ = ["cdf", "logcdf", "logpmf", "logsf", "pmf", "rvs", "sf"]

rvs = sampler("poisson")


def logpmf(k, mu, loc=0):
    k, mu = data(k) - operand(loc), operand(mu)
    count = A.logical_and(k >= 0, A.eq(k, U.floor(k)))
    k = A.where(count, k, 0.0)
    value = S.xlogy(k, mu) - G.gammaln(k + 1) - mu
    return checked(A.where(count, value, -INF), mu < 0)


def pmf(k, mu, loc=0):
    return U.exp(logpmf(k, mu, loc))


def _floor(k, loc):
    """floor(k - loc), with no gradient (cdf and sf are steps in k), and where it is negative."""
    k = stop_gradient(U.floor(data(k) - operand(loc)))
    below = k < 0
    return A.where(below, 0.0, k), below


def cdf(k, mu, loc=0):
    """``Q(floor(k) + 1, mu)``, the regularised upper incomplete gamma function."""
    k, below = _floor(k, loc)
    mu = operand(mu)
    return checked(A.where(below, 0.0, G.gammaincc(k + 1, mu)), mu < 0)


def sf(k, mu, loc=0):
    k, below = _floor(k, loc)
    mu = operand(mu)
    return checked(A.where(below, 1.0, G.gammainc(k + 1, mu)), mu < 0)


def logcdf(k, mu, loc=0):
    return U.log(cdf(k, mu, loc))


def logsf(k, mu, loc=0):
    return U.log(sf(k, mu, loc))
