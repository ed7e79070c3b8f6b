"""Student's t distribution: a normal variable divided by the root of an independent
chi-square one over its degrees of freedom (heavier tails for smaller ``df``)."""
import math

import tracegrad

from ..runtime.tensor import Size
from . import constraints
from .distribution import Distribution
from .utils import _standard_normal, broadcast_all

__all__ = ["StudentT"]


def _chi2_sample(df, shape):
    """Chi-square draws of ``shape`` with ``df`` degrees of freedom: ``2 * Gamma(df/2)``
    where a Gamma sampler exists; else, for integer ``df`` only, a sum of ``df`` squared
    standard normals (masked to each element's own ``df``)."""
    df = df.expand(shape)
    try:
        from .gamma import Gamma  # (written separately; used as soon as it is there)
    except ModuleNotFoundError as error:
        if error.name != __package__ + ".gamma":
            raise
        Gamma = None
    if Gamma is not None:
        return Gamma(0.5 * df, 0.5, validate_args=False).rsample()
    if hasattr(tracegrad, "_standard_gamma"):
        return 2 * tracegrad._standard_gamma(0.5 * df)
    with tracegrad.no_grad():
        if not bool((df == df.round()).all()):
            raise NotImplementedError("StudentT.sample/rsample with a non-integer df needs Gamma (chi-square) "
                                      "sampling, which tracegrad does not have yet (no distributions.Gamma, no "
                                      "tracegrad._standard_gamma); only integer df can be sampled")
        k = int(df.max().item()) if df.numel() else 0
        z = _standard_normal(tuple(shape) + (k,), dtype=df.dtype, device=df.device)
        used = tracegrad.arange(k, device=df.device) < df.unsqueeze(-1)
        return (z * z * used).sum(-1)


class StudentT(Distribution):
    """Student's t distribution with ``df`` degrees of freedom, location ``loc`` and
    scale ``scale``."""
    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        super().__init__(self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(StudentT, batch_shape, _instance, {"df": (), "loc": (), "scale": ()})

    @property
    def mean(self):
        """``loc`` where ``df > 1``; NaN where the mean does not exist."""
        return tracegrad.where(self.df <= 1, math.nan, self.loc)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        """``scale^2 df / (df - 2)`` where ``df > 2``; inf for ``1 < df <= 2``; NaN below."""
        big = self.df > 2
        df = tracegrad.where(big, self.df, 3.0)  # (keeps the unused branch and its gradient finite)
        finite = self.scale.pow(2) * df / (df - 2)
        return tracegrad.where(big, finite, tracegrad.where(self.df > 1, math.inf, math.nan))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        x = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        y = x * tracegrad.rsqrt(_chi2_sample(self.df, shape) / self.df)
        return self.loc + self.scale * y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi) + tracegrad.lgamma(0.5 * self.df)
             - tracegrad.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * tracegrad.log1p(y ** 2.0 / self.df) - z

    def entropy(self):
        half_df, half_df1 = 0.5 * self.df, 0.5 * (self.df + 1)
        lbeta = tracegrad.lgamma(half_df) + math.lgamma(0.5) - tracegrad.lgamma(half_df1)
        return (self.scale.log() + half_df1 * (tracegrad.digamma(half_df1) - tracegrad.digamma(half_df))
                + 0.5 * self.df.log() + lbeta)
