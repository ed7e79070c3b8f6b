"""``scipy.stats.dirichlet`` with derivatives in ``x`` and ``alpha`` (to any order):
SciPy's layout (the components along the FIRST axis of ``x``: ``(K,)`` or ``(K, N)``; with
``K - 1`` components the last is ``1 - sum``) and its checks, which read values (on a tape
they become guards: the tape is traced again when a check would answer differently)."""
from ...rules import arith as A
from ...rules import gamma as G
from ...rules import reduce as R
from ...rules import special as S
from ...rules import unary as U
from ...rules.shape import cat, reshape
from ._common import data, operand, sampler, squeeze_output

__all__ = ["logpdf", "pdf", "rvs"]

rvs = sampler("dirichlet")


def _lnB(alpha):
    """log of the multivariate beta function, sum(gammaln(alpha)) - gammaln(sum(alpha))."""
    return R.sum(G.gammaln(alpha)) - G.gammaln(R.sum(alpha))


def _check_parameters(alpha):
    alpha = operand(alpha)
    if bool(R.amin(alpha) <= 0):
        raise ValueError("All parameters must be greater than 0")
    if alpha.ndim != 1:
        raise ValueError(f"Parameter vector 'a' must be one dimensional, but a.shape = {tuple(alpha.shape)}.")
    return alpha


def _check_input(alpha, x):
    x = data(x)
    k = alpha.shape[0]
    if x.shape[0] + 1 != k and x.shape[0] != k:
        raise ValueError("Vector 'x' must have either the same number of entries as, or one entry fewer than, "
                         f"parameter vector 'a', but alpha.shape = {tuple(alpha.shape)} and x.shape = "
                         f"{tuple(x.shape)}.")
    if x.shape[0] != k:
        if x.ndim > 2:
            raise ValueError("The input must be one dimensional or a two dimensional matrix containing the "
                             "entries.")
        x = cat(x, 1 - R.sum(x, dim=(0,), keepdim=True), dim=0)
    if bool(R.amin(x) < 0):
        raise ValueError("Each entry in 'x' must be greater than or equal to zero.")
    if bool(R.amax(x) > 1):
        raise ValueError("Each entry in 'x' must be smaller or equal one.")
    if bool(R.any_(A.logical_and(A.eq(x, 0), _column(alpha, x) < 1))):
        raise ValueError("Each entry in 'x' must be greater than zero if its alpha is less than one.")
    if bool(R.any_(U.abs(R.sum(x, dim=(0,)) - 1.0) > 10e-10)):
        raise ValueError("The input vector 'x' must lie within the normal simplex.")
    return x


def _column(alpha, x):
    """``alpha`` shaped to broadcast along the first axis of ``x``."""
    return reshape(alpha, shape=tuple(alpha.shape) + (1,) * (x.ndim - 1))


def logpdf(x, alpha):
    alpha = _check_parameters(alpha)
    x = _check_input(alpha, x)
    return squeeze_output(R.sum(S.xlogy(_column(alpha, x) - 1, x), dim=(0,)) - _lnB(alpha))


def pdf(x, alpha):
    return U.exp(logpdf(x, alpha))
