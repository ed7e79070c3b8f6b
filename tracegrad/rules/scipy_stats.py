"""Distribution functions that ``scipy.stats`` needs and no other rule gives: Student's t
distribution function ``stdtr(df, t)`` (SciPy's kernel, imported when it first runs).

Its derivative in ``t`` is the t density. Written as a composition of ``betainc`` it
would be ``0 * inf`` (nan) at ``t = 0``, where the incomplete beta function's own slope
is infinite; a rule of its own has the density there. ``df`` is a shape parameter of
the incomplete beta function, whose derivative has no closed form: differentiating it
raises, as :mod:`tracegrad.rules.gamma` does for betainc.
"""
import math

from ..backend import cpu
from .broadcast import expand_to, unbroadcast
from .core import FLOAT, primitive
from .gamma import gammaln, no_derivative, special
from .unary import exp, log, log1p

__all__ = ["stdtr", "t_log_density"]

_LOG_PI = math.log(math.pi)


def t_log_density(df, t):
    """log of Student's t density with ``df`` degrees of freedom at ``t``."""
    return (gammaln((df + 1) * 0.5) - gammaln(df * 0.5) - 0.5 * (_LOG_PI + log(df))
            - (df + 1) * 0.5 * log1p(t * t / df))


@primitive(dtypes=FLOAT)
def stdtr(xp, df, t):
    """Student's t distribution function with ``df`` degrees of freedom, at ``t`` (on the
    host for arrays of other devices: CuPy has no stdtr)."""
    if getattr(xp, "name", "cpu") == "cpu":
        return special(xp, "stdtr", df, t)
    return xp.from_host(special(cpu, "stdtr", *(xp.to_host(v) if hasattr(v, "shape") else v for v in (df, t))))


@stdtr.vjp("df")
def stdtr_vjp_df(g, out, df, t):
    return no_derivative("stdtr", "df")


@stdtr.vjp("t", uses="df t")
def stdtr_vjp_t(g, out, df, t):
    return unbroadcast(g * exp(t_log_density(df, t)), t)


@stdtr.jvp("t")
def stdtr_jvp_t(t_dot, out, df, t):
    return expand_to(t_dot * exp(t_log_density(df, t)), out)
