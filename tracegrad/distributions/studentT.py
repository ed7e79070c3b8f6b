"""Student's t distribution: a normal variable divided by the root of an independent
chi-square one over its degrees of freedom (heavier tails for smaller ``df``)."""
import math

import tracegrad

from ..runtime.tensor import Size
from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .utils import _standard_normal, broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t distribution with ``df`` degrees of freedom, location ``loc`` and
    scale ``scale``."""
    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)  # (validated first: a bad df is reported as Chi2's, as in PyTorch)
        super().__init__(self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(StudentT, batch_shape, _instance, {"df": (), "loc": (), "scale": ()})
        new._chi2 = self._chi2.expand(batch_shape)
        return new

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
        y = x * tracegrad.rsqrt(self._chi2.rsample(sample_shape) / self.df)
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
