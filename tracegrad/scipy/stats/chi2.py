"""``scipy.stats.chi2``: the gamma distribution with shape ``df / 2`` and scale
``2 scale`` (:mod:`.gamma`, whose derivatives and limits it has: pdf and logpdf are
differentiable in every argument, cdf and sf not in ``df``)."""
from . import gamma as _gamma
from ._common import operand, sampler

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "rvs", "sf"]

rvs = sampler("chi2")


def _as_gamma(fn):
    def f(x, df, loc=0, scale=1):
        return fn(x, operand(df) * 0.5, loc, operand(scale) * 2)
    f.__name__ = f.__qualname__ = fn.__name__
    f.__doc__ = f"chi2.{fn.__name__}(x, df, loc=0, scale=1): gamma.{fn.__name__}(x, df / 2, loc, 2 scale)."
    return f


pdf, logpdf, cdf, logcdf, sf, logsf = (_as_gamma(fn) for fn in (
    _gamma.pdf, _gamma.logpdf, _gamma.cdf, _gamma.logcdf, _gamma.sf, _gamma.logsf))
