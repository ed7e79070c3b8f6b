"""``scipy.stats.t`` (Student's) with derivatives: pdf and logpdf in ``x``, ``df``,
``loc`` and ``scale``; cdf and sf in ``x``, ``loc`` and ``scale`` only (rule ``stdtr``,
whose derivative in ``df`` -- a shape parameter of the incomplete beta function -- has no
closed form: differentiating it raises NotImplementedError, never a silent zero). nan for
non-positive ``df`` or ``scale``; ``df = inf`` (the normal limit) is not special-cased."""
from ...rules import scipy_stats as ST
from ...rules import unary as U
from ._common import checked, data, operand, sampler

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "rvs", "sf"]

rvs = sampler("t")


def _standard(x, df, loc, scale):
    df, scale = operand(df), operand(scale)
    return (data(x) - operand(loc)) / scale, df, scale


def logpdf(x, df, loc=0, scale=1):
    z, df, scale = _standard(x, df, loc, scale)
    return checked(ST.t_log_density(df, z) - U.log(scale), df <= 0, scale <= 0)


def pdf(x, df, loc=0, scale=1):
    return U.exp(logpdf(x, df, loc, scale))


def cdf(x, df, loc=0, scale=1):
    z, df, scale = _standard(x, df, loc, scale)
    return checked(ST.stdtr(df, z), df <= 0, scale <= 0)


def sf(x, df, loc=0, scale=1):
    z, df, scale = _standard(x, df, loc, scale)
    return checked(ST.stdtr(df, -z), df <= 0, scale <= 0)


def logcdf(x, df, loc=0, scale=1):
    return U.log(cdf(x, df, loc, scale))


def logsf(x, df, loc=0, scale=1):
    return U.log(sf(x, df, loc, scale))
